// Package testwait is how a test waits for a condition nothing signals: a
// bounded poll (another process's state, a page in Chromium, a fake
// server's counters, River's jobs in a process the test does not run). A
// wait that can be signalled (a channel, River's client.Subscribe) uses
// that instead.
package testwait

import (
	"testing"
	"time"
)

// Interval is how long Until waits between two looks at its condition.
const Interval = 20 * time.Millisecond

// Until reports whether cond held within d, looking every Interval.
func Until(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(Interval) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// For waits up to d until cond holds and fails the test otherwise, saying
// what it waited for.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}
