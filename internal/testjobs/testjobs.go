// Package testjobs lets tests ask River about jobs through River's own API
// (an insert-only client's JobList) instead of reading its tables with SQL,
// so the tests keep working when River changes its schema.
package testjobs

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/migrations"
)

// List returns the jobs of kind in any of states (all states when none is
// given), oldest first. It fails the test when River cannot be asked.
func List(t testing.TB, pool *pgxpool.Pool, kind string, states ...rivertype.JobState) []*rivertype.JobRow {
	t.Helper()
	client, err := river.NewClient[pgx.Tx](riverpgxv5.New(pool), &river.Config{Schema: migrations.RiverSchema})
	if err != nil {
		t.Fatalf("testjobs: River client: %v", err)
	}
	params := river.NewJobListParams().Kinds(kind).First(10000).OrderBy(river.JobListOrderByID, river.SortOrderAsc)
	if len(states) > 0 {
		params = params.States(states...)
	}
	res, err := client.JobList(context.Background(), params)
	if err != nil {
		t.Fatalf("testjobs: listing %s jobs: %v", kind, err)
	}
	return res.Jobs
}

// Count is len(List(...)).
func Count(t testing.TB, pool *pgxpool.Pool, kind string, states ...rivertype.JobState) int {
	t.Helper()
	return len(List(t, pool, kind, states...))
}

// WaitCompleted waits up to 30 s until n jobs of kind have completed and
// fails the test otherwise.
func WaitCompleted(t testing.TB, pool *pgxpool.Pool, kind string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := Count(t, pool, kind, rivertype.JobStateCompleted)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testjobs: %d completed %s jobs after 30 s, want %d", got, kind, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
