package database_test

import (
	"context"
	"strings"
	"testing"

	"followfeed/database"
	"followfeed/internal/testdb"
)

type mark string

// TextByID returns every row's text under its id, as the caller's string
// type, nothing for no rows, and names the read when the query fails.
func TestTextByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	got, err := database.TextByID[mark](ctx, db, "marks", `SELECT g::bigint, 'm' || g FROM generate_series(1, $1) g`, 3)
	if err != nil || len(got) != 3 || got[1] != "m1" || got[3] != "m3" {
		t.Fatalf("TextByID = %v, %v", got, err)
	}
	if got, err := database.TextByID[mark](ctx, db, "marks", `SELECT 1::bigint, 'x' WHERE false`); err != nil || len(got) != 0 {
		t.Errorf("no rows: %v, %v", got, err)
	}
	if _, err := database.TextByID[mark](ctx, db, "the marks of user 7", `SELECT 1::bigint, NULL::text`); err == nil || !strings.Contains(err.Error(), "the marks of user 7") {
		t.Errorf("a NULL text: %v", err)
	}
}
