package catalog

import (
	"context"
	"strings"
	"testing"
	"time"

	"followfeed/internal/testdb"
)

// The backfill and preview scan reads the last 30 days through
// papers_recent_idx, not every paper: with the table's statistics the
// planner picks the index for a window holding a small share of papers.
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
	var plan []string
	rows, err := db.Pool.Query(ctx, "EXPLAIN "+recentSQL, time.Now().Add(-BackfillDays*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if got := strings.Join(plan, "\n"); !strings.Contains(got, "papers_recent_idx") || strings.Contains(got, "Seq Scan on papers") {
		t.Errorf("the recent-papers scan does not use papers_recent_idx:\n%s", got)
	}
}
