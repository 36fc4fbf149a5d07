package harvest_test

import (
	"context"
	"testing"
	"time"

	"followfeed/database"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/paper"
	"followfeed/worker"
)

// newStore is a paper store on a fresh database, enqueuing real match jobs.
func newStore(t *testing.T) (*paper.Store, *database.DB) {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return paper.NewStore(db, worker.NewEnqueuer(ins)), db
}

// testPaper is a test factory: a valid paper in cs.LG with one author.
func testPaper(id string, mods ...func(*paper.Paper)) paper.Paper {
	base, _, _ := paper.ParseArxivID(id)
	p := paper.Paper{
		ArxivID: id, Title: "A paper called " + base, Abstract: "Abstract of " + base,
		Authors:         []paper.Author{{Name: "Ada Lovelace"}},
		PrimaryCategory: "cs.LG", Categories: []string{"cs.LG", "stat.ML"},
		SubmittedAt: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func count(t *testing.T, db *database.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func matchJobs(t *testing.T, db *database.DB) int {
	return testjobs.Count(t, db.Pool, "match_batch")
}
