package feeds

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseLimit: ?limit= is either rejected or a number from 1 to
// MaxLimit spelled in plain digits. Seeds in testdata/fuzz/FuzzParseLimit.
func FuzzParseLimit(f *testing.F) {
	f.Log("hostile: decoders")
	for _, s := range []string{"", "1", "50", "200", "201", "0", "-1", "1e3", "٣", "99999999999999999999", " 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseLimit(s)
		if err != nil {
			if !strings.Contains(err.Error(), "limit") {
				t.Fatalf("error %q does not name the parameter", err)
			}
			return
		}
		if s == "" {
			if n != DefaultLimit {
				t.Fatalf("empty limit gave %d", n)
			}
			return
		}
		if n < 1 || n > MaxLimit {
			t.Fatalf("accepted %q as %d", s, n)
		}
		if m, err := strconv.Atoi(s); err != nil || m != n || strings.TrimLeft(s, "0123456789") != "" {
			t.Fatalf("accepted %q as %d", s, n)
		}
	})
}

// FuzzWellFormed: a feed token is accepted only in the exact shape issued
// (prefix, length, URL-safe alphabet), so nothing else reaches the
// database. Seeds in testdata/fuzz/FuzzWellFormed.
func FuzzWellFormed(f *testing.F) {
	f.Log("hostile: decoders")
	good := TokenPrefix + strings.Repeat("A", tokenLen-len(TokenPrefix))
	for _, s := range []string{good, good[:len(good)-1], good + "A", TokenPrefix, "", strings.Replace(good, "A", "/", 1), strings.Replace(good, "A", "é", 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !WellFormed(s) {
			return
		}
		if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
			t.Fatalf("accepted %q", s)
		}
		for _, c := range s[len(TokenPrefix):] {
			if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", c) {
				t.Fatalf("accepted %q with %q", s, c)
			}
		}
	})
}
