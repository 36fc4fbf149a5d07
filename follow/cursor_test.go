package follow

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeCursor: ?cursor= is either rejected or decodes to a position
// that encodes back to the same position; positions round-trip, and a
// position whose key is not text is refused. Seeds in
// testdata/fuzz/FuzzDecodeCursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Log("hostile: decoders")
	f.Add(encodeCursor(time.Date(2026, 11, 29, 10, 0, 0, 123000, time.UTC), "category:cs.LG"), int64(0), "researcher:openalex:A5023888391")
	f.Add("", int64(-1), "")
	f.Add("AAAAAAAAAAA", int64(1<<62), "x")
	f.Fuzz(func(t *testing.T, c string, micros int64, key string) {
		if at, k, err := decodeCursor(c); err == nil {
			at2, k2, err := decodeCursor(encodeCursor(at, k))
			if err != nil || !at2.Equal(at) || k2 != k {
				t.Fatalf("cursor %q: %v %q, re-encoded %v %q %v", c, at, k, at2, k2, err)
			}
		}
		// Positions of real follows round-trip; keys are text (valid
		// UTF-8, no NUL), so a cursor with any other key is refused.
		if key == "" || len(key) > maxKeyBytes || !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
			if key != "" && len(key) <= maxKeyBytes {
				if _, _, err := decodeCursor(encodeCursor(time.UnixMicro(micros), key)); err == nil {
					t.Fatalf("a cursor with key %q was accepted", key)
				}
			}
			return
		}
		at := time.UnixMicro(micros)
		got, k, err := decodeCursor(encodeCursor(at, key))
		if err != nil || !got.Equal(at) || k != key {
			t.Fatalf("(%v, %q) round trip: %v %q %v", at, key, got, k, err)
		}
	})
}
