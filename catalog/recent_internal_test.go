package catalog

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/testdb"
)

// The backfill and preview scan reads the last 30 days through
// papers_recent_idx, not every paper: with the table's statistics the
// planner picks the index for a window holding a small share of papers,
// and each chunk starts at its cursor in the index (no sort, no rows of
// the chunks before read again); the backfill's catch-up lists the
// window's row versions by the same range.
func TestRecentScanUsesTheIndex(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	// 3,000 papers over ten years, 25 of them in the last 30 days.
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO papers (arxiv_id, version, title, primary_category, categories, abs_url, pdf_url, source, announced_at)
		SELECT '2001.' || to_char(g, 'FM00000'), 1, 'Paper ' || g, 'cs.LG', '{cs.LG}', 'u', 'u', 'push',
		       now() - (g * interval '29 hours')
		FROM generate_series(1, 3000) g`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE papers`); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-BackfillDays * 24 * time.Hour)
	for _, c := range []struct {
		what string
		sql  string
		args []any
	}{
		{"the first chunk", recentSQL, []any{since, scanCursorStart, int64(math.MaxInt64), recentChunk}},
		{"a later chunk", recentSQL, []any{since, time.Now().Add(-10 * 24 * time.Hour), int64(1500), recentChunk}},
		{"the backfill's list of versions", recentVersionsSQL, []any{since}},
	} {
		rows, err := db.Pool.Query(ctx, "EXPLAIN "+c.sql, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(plan, "\n")
		if !strings.Contains(got, "papers_recent_idx") || strings.Contains(got, "Seq Scan on papers") || strings.Contains(got, "Sort") {
			t.Errorf("%s does not read a range of papers_recent_idx:\n%s", c.what, got)
		}
		if c.sql == recentSQL && !strings.Contains(got, "ROW(") {
			t.Errorf("%s does not start at its cursor in the index:\n%s", c.what, got)
		}
	}
}
