package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"followfeed/app"
	"followfeed/internal/cli"
)

// TestHelpNamesArguments: every command's --help lists its flags with real
// argument names, never prose (the flag package reads a backquoted word in
// a usage string as the argument name: "-once serve" once).
func TestHelpNamesArguments(t *testing.T) {
	var top bytes.Buffer
	_ = app.Run(context.Background(), []string{"--help"}, func(string) string { return "" }, &top)
	for _, cmd := range []string{"serve", "api", "worker", "migrate", "token", "harvest", "digest"} {
		if !strings.Contains(top.String(), "  "+cmd+" ") {
			t.Errorf("followfeed --help does not list %s", cmd)
		}
		var out bytes.Buffer
		_ = app.Run(context.Background(), []string{cmd, "--help"}, func(string) string { return "" }, &out)
		if !strings.HasPrefix(out.String(), "Usage: followfeed "+cmd) {
			t.Errorf("%s --help: %q", cmd, out.String())
		}
		for _, p := range cli.HelpProblems(out.String()) {
			t.Errorf("followfeed %s --help: %s", cmd, p)
		}
	}
	for _, p := range cli.HelpProblems(top.String()) {
		t.Errorf("followfeed --help: %s", p)
	}
}
