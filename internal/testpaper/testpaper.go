// Package testpaper is the test factory for papers: a paper store on a
// fresh database that enqueues real match jobs, and valid papers to put in
// it.
package testpaper

import (
	"context"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/paper"
	"followfeed/worker"
)

// NewStore returns a paper store on a fresh test database whose ingests
// enqueue real River match jobs, and the database.
func NewStore(t testing.TB) (*catalog.Store, *database.DB) {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.NewStore(db, worker.NewEnqueuer(ins)), db
}

// New returns a valid paper with arXiv id id (a version suffix is kept) in
// cs.LG, cross-listed to stat.ML, with one author without ids; mods adjust
// it.
func New(id string, mods ...func(*paper.Paper)) paper.Paper {
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

// Count runs a count(*) query and fails the test on an error.
func Count(t *testing.T, db *database.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// MatchJobs is the number of match jobs River holds, in any state.
func MatchJobs(t *testing.T, db *database.DB) int {
	t.Helper()
	return testjobs.Count(t, db.Pool, worker.MatchArgs{}.Kind())
}
