package harvest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"followfeed/internal/testdb"
)

// TestSaveErrorCutsCharactersNotBytes: an upstream error of multibyte text
// longer than the column's cap is stored cut at a character boundary (a
// byte cut made invalid UTF-8, which PostgreSQL refuses, so the error was
// lost).
func TestSaveErrorCutsCharactersNotBytes(t *testing.T) {
	t.Log("hostile: malformed")
	db := testdb.New(t)
	h := &Harvester{db: db, logger: slog.New(slog.DiscardHandler), now: time.Now}
	cause := errors.New("a" + strings.Repeat("é", 700) + "\x00 and a NUL") // 1,401 bytes; byte 1000 splits an é
	h.saveError(context.Background(), "oai:test", cause)
	var got string
	if err := db.Pool.QueryRow(context.Background(), `SELECT coalesce(last_error, '') FROM harvest_state WHERE source = 'oai:test'`).Scan(&got); err != nil {
		t.Fatalf("the error was not stored: %v", err)
	}
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "aé") || utf8.RuneCountInString(got) > 1001 {
		t.Errorf("stored %d characters: %.40q", utf8.RuneCountInString(got), got)
	}
}
