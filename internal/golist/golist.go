// Package golist runs `go list` for the tests that keep the package graph's
// rules (the product links no lab code, package paper imports no database,
// the identity registry links no harvester, ...).
package golist

import (
	"os/exec"
	"strings"
	"testing"
)

// Packages returns the words `go list args...` prints (import paths, with
// -deps every package the named ones link), failing the test when go list
// fails.
func Packages(t testing.TB, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}
