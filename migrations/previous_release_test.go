package migrations_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"followfeed/internal/querylog"
	"followfeed/internal/testdb"
	"followfeed/migrations"
)

// previousQueries is the capture of the statements the previous release
// (migrations.PreviousRelease) sends: every distinct statement its api and
// worker processes sent during the soak's rolling-upgrade scenario, before
// the upgrade (PostgreSQL's log with log_statement=all). When
// PreviousRelease moves on (at each release), re-capture it:
//
//	make soak SOAK_FLAGS="--only rolling-upgrade --capture-queries migrations/testdata/previous-release-queries.sql"
//
// The scenario also fails while the file lacks a statement it saw.
const previousQueries = "testdata/previous-release-queries.sql"

// readPrevious reads the capture and checks that it is the previous
// release's and that the migrations that release shipped are unchanged.
func readPrevious(t *testing.T) *querylog.File {
	t.Helper()
	data, err := os.ReadFile(previousQueries)
	if err != nil {
		t.Fatal(err)
	}
	f, err := querylog.Parse(string(data))
	if err != nil {
		t.Fatalf("%s: %v", previousQueries, err)
	}
	if f.Release != migrations.PreviousRelease {
		t.Fatalf("%s holds release %s's statements, but migrations.PreviousRelease is %s: re-capture it (see previousQueries)",
			previousQueries, f.Release, migrations.PreviousRelease)
	}
	digest, err := querylog.MigrationsDigest(os.DirFS("sql"), f.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if digest != f.Migrations {
		t.Fatalf("the migrations up to %d are not those the previous release shipped (%s, now %s): a released migration never changes; "+
			"undo the edit and add a migration instead", f.Schema, f.Migrations, digest)
	}
	return f
}

// TestPreviousReleaseQueries holds the previous release's SQL against the
// current schema, the schema its processes meet while a rolling upgrade
// replaces them (README "Upgrading"): every captured statement must
// PREPARE (every table, column, function, operator and type it names
// still there, its parameters typed as before), and the rows its INSERTs
// and COPYs write must need no column it does not give. First the
// statements are checked against the previous release's own schema (its
// migrations are this tree's first ones, which readPrevious checks are
// unchanged), so a broken capture cannot pass for a compatible schema.
func TestPreviousReleaseQueries(t *testing.T) {
	f := readPrevious(t)
	ctx := context.Background()
	url, pool, prov := emptyDB(t)
	if _, err := prov.UpTo(ctx, f.Schema); err != nil {
		t.Fatalf("migrating to the previous release's schema %d: %v", f.Schema, err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+migrations.RiverSchema); err != nil {
		t.Fatal(err)
	}
	rm, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: migrations.RiverSchema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if bad := misfits(ctx, conn, f.Statements); len(bad) > 0 {
		t.Fatalf("%d captured statements do not fit the previous release's own schema %d, so the capture is wrong (re-capture it, see previousQueries):\n%s",
			len(bad), f.Schema, strings.Join(bad, "\n"))
	}

	res, err := migrations.Up(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AppApplied) == 0 {
		t.Logf("no migration since the previous release's %d", f.Schema)
	}
	for _, bad := range misfits(ctx, conn, f.Statements) {
		t.Errorf("the previous release sends a statement the current schema cannot run, so its processes fail while a rolling upgrade replaces them: "+
			"expand only (add, never drop or rename what it reads) and contract in a later release.\n%s", bad)
	}
	procs := map[string]int{}
	origins := map[string]int{}
	for _, s := range f.Statements {
		origins[s.Origin]++
		for _, p := range s.Processes {
			procs[p]++
		}
	}
	// A capture too small to mean anything fails too.
	if origins[querylog.OriginFollowfeed] < 100 || procs["api"] == 0 || procs["worker"] == 0 || origins[querylog.OriginRiver] == 0 {
		t.Errorf("the capture holds %v statements from processes %v: too few to stand for the release", origins, procs)
	}
	if !t.Failed() {
		t.Logf("the %d statements of release %s (schema %d) fit the current schema (%d migrations since): %v", len(f.Statements), f.Release[:12], f.Schema, len(res.AppApplied), origins)
	}
}

// A contraction of something the previous release still reads fails the
// test above: here instant_readers(), which migration 00022 keeps for it
// (its match job calls it) until a later release drops it.
func TestPreviousReleaseQueriesSeeAContraction(t *testing.T) {
	f := readPrevious(t)
	ctx := context.Background()
	url := testdb.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var calling []querylog.Statement
	for _, s := range f.Statements {
		if strings.Contains(s.SQL, "instant_readers()") {
			calling = append(calling, s)
		}
	}
	if len(calling) == 0 {
		t.Fatal("no captured statement calls instant_readers(): the capture lacks the match job's query")
	}
	if bad := misfits(ctx, conn, calling); len(bad) > 0 {
		t.Fatalf("before the contraction: %s", strings.Join(bad, "\n"))
	}
	if _, err := conn.Exec(ctx, "DROP FUNCTION instant_readers()"); err != nil {
		t.Fatal(err)
	}
	bad := misfits(ctx, conn, f.Statements)
	if len(bad) != len(calling) || !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, "instant_readers() does not exist") }) {
		t.Errorf("after dropping instant_readers(), %d of the %d statements calling it fail the check:\n%s", len(bad), len(calling), strings.Join(bad, "\n"))
	}
}

// misfits checks each statement and describes those that fail.
func misfits(ctx context.Context, conn *pgx.Conn, stmts []querylog.Statement) []string {
	var out []string
	for i, s := range stmts {
		if err := querylog.Check(ctx, conn, s.SQL); err != nil {
			first, _, _ := strings.Cut(strings.TrimSpace(s.SQL), "\n")
			out = append(out, fmt.Sprintf("statement %d (%s, sent by %s): %s…: %v", i+1, s.Origin, strings.Join(s.Processes, " and "), first, err))
		}
	}
	return out
}
