package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"followfeed/database"
	"followfeed/internal/testdb"
)

// schemaOf lists the indexes and constraints of the tables the generator
// loads bare, as the catalog defines them.
func schemaOf(t *testing.T, db *database.DB) []string {
	t.Helper()
	return testdb.Strings(t, db, `
		SELECT indrelid::regclass || ': ' || pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid IN ('papers'::regclass, 'paper_keys'::regclass, 'follows'::regclass)
		UNION ALL
		SELECT conrelid::regclass || ': ' || conname || ' ' || pg_get_constraintdef(oid) || ' ' || convalidated FROM pg_constraint
		WHERE conrelid IN ('papers'::regclass, 'paper_keys'::regclass, 'follows'::regclass)
		ORDER BY 1`)
}

// The real generator at a tiny scale: it gives back every index and
// constraint it dropped for the load, records the build in bench_meta
// (scale, build time, disk size), builds every user their follows
// without duplicates, spreads arXiv ids below the batch's, and Seeded
// then recognises the scale and no other.
func TestGenerateRestoresSchemaAndRecordsTheBuild(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	before := schemaOf(t, db)
	s := Scale{Users: 40, CategoryFollow: 3, ResearcherFoll: 4, Papers: 1500, Researchers: 80, AuthorsPer: 2, AbstractChars: 50, Identities: 1}
	if err := Generate(ctx, db, s, io.Discard); err != nil {
		t.Fatal(err)
	}
	if after := schemaOf(t, db); !slices.Equal(before, after) {
		t.Errorf("schema after the build differs:\nbefore %q\nafter  %q", before, after)
	}
	var scale string
	var seconds float64
	var disk int64
	if err := db.Pool.QueryRow(ctx, `SELECT scale, build_seconds, disk_bytes FROM bench_meta`).Scan(&scale, &seconds, &disk); err != nil {
		t.Fatal(err)
	}
	if scale != fmt.Sprint(s) || seconds <= 0 || disk < 1<<20 {
		t.Errorf("bench_meta: %q, %.2f s, %d bytes", scale, seconds, disk)
	}
	var users, perUserMax, maxAid int
	var dup bool
	if err := db.Pool.QueryRow(ctx, `SELECT count(DISTINCT user_id), max(n),
			(SELECT max(left(arxiv_id, 4)::int) FROM papers),
			EXISTS (SELECT 1 FROM follows GROUP BY user_id, key HAVING count(*) > 1)
		FROM (SELECT user_id, count(*) n FROM follows GROUP BY user_id) f`).Scan(&users, &perUserMax, &maxAid, &dup); err != nil {
		t.Fatal(err)
	}
	if users != s.Users || perUserMax > s.CategoryFollow+s.ResearcherFoll || dup || maxAid >= 2901 {
		t.Errorf("%d users with follows, at most %d each, duplicates %v, newest arXiv month %d", users, perUserMax, dup, maxAid)
	}
	for _, c := range []struct {
		s    Scale
		want bool
	}{{s, true}, {ScaleS, false}, {ScaleM, false}} {
		if got, err := Seeded(ctx, db, c.s); err != nil || got != c.want {
			t.Errorf("Seeded(%v) = %v, %v", c.s, got, err)
		}
	}
	// A second build into the same database is refused, not run twice.
	if err := Build(ctx, db, Level{Name: "T", Scale: Scale{Users: 1, Papers: 1}}, io.Discard); err == nil {
		t.Error("Build of another scale into a built database succeeded")
	}
	if err := Build(ctx, db, Level{Name: "T", Scale: s}, io.Discard); err != nil {
		t.Errorf("Build of the built scale: %v", err)
	}
}

// Scale M's arXiv months stay below the batch's, and S's plan is the one
// it always had (20,000 papers a month), so S's dataset is not rebuilt.
func TestScalesPapersPerMonth(t *testing.T) {
	if fmt.Sprint(ScaleS) != "{100000 5 15 1000000 300000 4 1200 2}" {
		t.Errorf("ScaleS is %v: a changed value rebuilds every S dataset", ScaleS)
	}
	for _, s := range []Scale{ScaleS, ScaleM} {
		monthly := papersPerMonth(s)
		last := s.Papers / monthly
		if yymm := (20+last/12)*100 + 1 + last%12; yymm >= 2901 || monthly > 99_999 {
			t.Errorf("%v: %d a month, last month %d", s, monthly, yymm)
		}
	}
}
