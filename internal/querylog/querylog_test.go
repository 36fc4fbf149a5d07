package querylog_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/querylog"
	"followfeed/internal/testdb"
)

func TestSplit(t *testing.T) {
	got := querylog.Split("BEGIN; SELECT ';' AS x, \"a;b\"; SELECT $$a;b$$, $tag$;$tag$; -- c;\nSELECT 1 /* ; */;; SELECT $1")
	want := []string{"BEGIN", `SELECT ';' AS x, "a;b"`, "SELECT $$a;b$$, $tag$;$tag$", "-- c;\nSELECT 1 /* ; */", "SELECT $1"}
	if !slices.Equal(got, want) {
		t.Errorf("Split:\n got %q\nwant %q", got, want)
	}
}

func TestKindOf(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT 1":                               querylog.KindPrepare,
		"  with x AS (SELECT 1) SELECT * FROM x": querylog.KindPrepare,
		"-- name: JobGetAvailable :many\nWITH locked AS (SELECT 1) UPDATE river_job SET x = 1": querylog.KindPrepare,
		"/* c */ (SELECT 1) UNION (SELECT 2)":                                                  querylog.KindPrepare,
		"insert into t (a) values ($1)":                                                        querylog.KindPrepare,
		`copy "t" ( "a" ) from stdin binary;`:                                                  querylog.KindCopy,
		"BEGIN ISOLATION LEVEL SERIALIZABLE":                                                   querylog.KindSession,
		"SET LOCAL statement_timeout = 5":                                                      querylog.KindSession,
		"LISTEN river_leadership":                                                              querylog.KindSession,
		"LOCK TABLE t":                                                                         querylog.KindOther,
		"CREATE TABLE t (a int)":                                                               querylog.KindOther,
		"-- only a comment":                                                                    querylog.KindSession,
		"UPDATE t SET a = 1 WHERE b = $1 RETURNING a":                                          querylog.KindPrepare,
		"DELETE FROM t":                                                                        querylog.KindPrepare,
		"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DO NOTHING":                       querylog.KindPrepare,
	} {
		if got := querylog.KindOf(sql); got != want {
			t.Errorf("KindOf(%q) = %s, want %s", sql, got, want)
		}
	}
}

func TestTargetsAndCopy(t *testing.T) {
	got := querylog.Targets(`WITH n AS (INSERT INTO "river"."river_job" AS j (args, "Kind") VALUES ($1, $2) RETURNING id)
		INSERT INTO papers(id, title) SELECT id, 'x' FROM n`)
	want := []querylog.Target{{Table: `"river"."river_job"`, Columns: []string{"args", "Kind"}}, {Table: "papers", Columns: []string{"id", "title"}}}
	if len(got) != len(want) {
		t.Fatalf("Targets: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Table != want[i].Table || !slices.Equal(got[i].Columns, want[i].Columns) {
			t.Errorf("target %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	sel, ok := querylog.CopyAsSelect(`copy "paper_keys" ( "key", "seq", "paper_id" ) from stdin binary;`)
	if !ok || sel != `SELECT "key", "seq", "paper_id" FROM "paper_keys"` {
		t.Errorf("CopyAsSelect: %q %v", sel, ok)
	}
	if _, ok := querylog.CopyAsSelect("COPY t TO STDOUT"); ok {
		t.Error("COPY TO taken for COPY FROM STDIN")
	}
	if tg := querylog.Targets(`copy "t" ( "a" ) from stdin binary;`); len(tg) != 1 || tg[0].Table != `"t"` || !slices.Equal(tg[0].Columns, []string{"a"}) {
		t.Errorf("a COPY's target: %+v", tg)
	}
}

func TestFileRoundTrip(t *testing.T) {
	set := querylog.NewSet()
	set.Add("SELECT a\n\tFROM t WHERE b = $1", "worker")
	set.Add("SELECT a FROM t WHERE b = $1", "api") // the same statement
	set.Add("-- name: LeaderGetElectedLeader :one\nSELECT elected_at FROM river.river_leader", "worker")
	set.Add("SELECT version_id FROM goose_db_version", "api")
	set.Add("INSERT INTO t (a) VALUES ($1)", "")
	if set.Len() != 4 || !set.Has("SELECT a FROM   t WHERE b = $1") {
		t.Fatalf("set of %d: %+v", set.Len(), set.Statements())
	}
	f := &querylog.File{Release: "abc123", Schema: 20, Migrations: "sha256:00 (20 migrations)", Captured: "2026-12-04 by `x`",
		Notes: []string{"A note.", "Another one."}, Statements: set.Statements()}
	var b strings.Builder
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := querylog.Parse(b.String())
	if err != nil {
		t.Fatalf("%v in:\n%s", err, b.String())
	}
	if got.Release != f.Release || got.Schema != 20 || got.Migrations != f.Migrations || got.Captured != f.Captured {
		t.Errorf("header: %+v", got)
	}
	if len(got.Statements) != 4 {
		t.Fatalf("%d statements: %+v", len(got.Statements), got.Statements)
	}
	for i, s := range f.Statements {
		g := got.Statements[i]
		if g.SQL != s.SQL || g.Origin != s.Origin || !slices.Equal(g.Processes, s.Processes) {
			t.Errorf("statement %d: %+v, want %+v", i+1, g, s)
		}
	}
	if o := []string{got.Statements[0].Origin, got.Statements[2].Origin, got.Statements[3].Origin}; !slices.Equal(o, []string{"followfeed", "goose", "river"}) {
		t.Errorf("order by origin: %v", o)
	}
	if !slices.Equal(got.Statements[1].Processes, []string{"api", "worker"}) {
		t.Errorf("processes merged: %v", got.Statements[1].Processes)
	}
	if _, err := querylog.Parse(strings.Replace(b.String(), "-- statement 2:", "-- statement 3:", 1)); err == nil {
		t.Error("a file with a statement number out of order parsed")
	}
	if _, err := querylog.Parse("-- release: x\n\n-- statement 1: followfeed, api\nSELECT 1\n"); err == nil {
		t.Error("a file without schema and migrations parsed")
	}
}

func TestReadLog(t *testing.T) {
	log := `{"timestamp":"2026-12-04 19:31:56.896 UTC","error_severity":"LOG","message":"ending log output to stderr","backend_type":"postmaster"}
{"timestamp":"2026-12-04 19:31:56.992 UTC","dbname":"d","message":"execute stmtcache_a34a: SELECT\n\tcount(*)\nFROM pg_class WHERE relname = $1","application_name":"followfeed api"}
{"timestamp":"2026-12-04 19:31:56.993 UTC","dbname":"d","message":"execute <unnamed>: SELECT count(*) FROM pg_class WHERE relname = $1","application_name":"followfeed worker"}
{"timestamp":"2026-12-04 19:31:56.994 UTC","dbname":"d","message":"statement: BEGIN; UPDATE t SET a = 1; COMMIT","application_name":"followfeed worker"}
{"timestamp":"2026-12-04 19:31:56.995 UTC","dbname":"other","message":"statement: SELECT 2","application_name":"followfeed api"}
{"timestamp":"2026-12-04 19:31:56.996 UTC","dbname":"d","message":"statement: SELECT 3","application_name":"followfeed soak"}
{"timestamp":"2026-12-04 19:31:56.997 UTC","dbname":"d","message":"duration: 1 ms","application_name":"followfeed api"}
`
	set := querylog.NewSet()
	n, err := querylog.ReadLog(strings.NewReader(log), set,
		func(e querylog.Entry) bool {
			return e.DBName == "d" && strings.HasPrefix(e.Application, "followfeed ") && e.Application != "followfeed soak"
		},
		func(e querylog.Entry) string { return strings.TrimPrefix(e.Application, "followfeed ") })
	if err != nil {
		t.Fatal(err)
	}
	got := set.Statements()
	if n != 3 || len(got) != 2 {
		t.Fatalf("%d messages, statements %+v", n, got)
	}
	if got[0].SQL != "SELECT\n\tcount(*)\nFROM pg_class WHERE relname = $1" || !slices.Equal(got[0].Processes, []string{"api", "worker"}) {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].SQL != "UPDATE t SET a = 1" || !slices.Equal(got[1].Processes, []string{"worker"}) {
		t.Errorf("second (BEGIN and COMMIT left out): %+v", got[1])
	}
	if _, err := querylog.ReadLog(strings.NewReader("not json\n"), set, func(querylog.Entry) bool { return true }, func(querylog.Entry) string { return "" }); err == nil {
		t.Error("a line that is not JSON read")
	}
}

// Check against a real schema: PREPARE finds what is gone, the NOT NULL
// check what PREPARE cannot see.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY, a int NOT NULL, b text NOT NULL DEFAULT '', c int);
		CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	for sql, want := range map[string]string{
		"SELECT a, f() FROM t WHERE c = $1 AND b = $2": "",
		"SELECT d FROM t":                  `column "d" does not exist`,
		"SELECT g()":                       "function g() does not exist",
		"UPDATE t SET c = $1 WHERE a = $2": "",
		"INSERT INTO t (a) VALUES ($1)":    "",
		"INSERT INTO t (c) VALUES ($1)":    "writes rows into t without a, NOT NULL with no default",
		"WITH x AS (SELECT 1) INSERT INTO t AS tt (a, c) SELECT 1, 2": "",
		`copy "t" ( "a", "c" ) from stdin binary;`:                    "",
		`copy "t" ( "c" ) from stdin binary;`:                         `writes rows into "t" without a`,
		`copy "t" ( "e" ) from stdin binary;`:                         `column "e" does not exist`,
		"LOCK TABLE t":                                                "a LOCK statement cannot be checked",
		"SELECT $1":                                                   "",
	} {
		err := querylog.Check(ctx, conn, sql)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", sql, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", sql, err, want)
		}
	}
	// A statement that failed leaves the connection usable and nothing
	// prepared behind.
	if err := querylog.Check(ctx, conn, "SELECT a FROM t"); err != nil {
		t.Errorf("after the failures: %v", err)
	}
}

func TestMigrationsDigest(t *testing.T) {
	fsys := fstest.MapFS{
		"00001_core.sql":   {Data: []byte("CREATE TABLE a ();")},
		"00002_more.sql":   {Data: []byte("CREATE TABLE b ();")},
		"00003_later.sql":  {Data: []byte("CREATE TABLE c ();")},
		"README.md":        {Data: []byte("not a migration")},
		"00004_future.sql": {Data: []byte("DROP TABLE a;")},
	}
	d2, err := querylog.MigrationsDigest(fsys, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(d2, "(2 migrations)") {
		t.Errorf("digest %q", d2)
	}
	renamed := fstest.MapFS{"00001_renamed.sql": fsys["00001_core.sql"], "00002_more.sql": fsys["00002_more.sql"]}
	if d, _ := querylog.MigrationsDigest(renamed, 2); d != d2 {
		t.Errorf("a renamed migration changed the digest: %s vs %s", d, d2)
	}
	edited := fstest.MapFS{"00001_core.sql": {Data: []byte("CREATE TABLE a (x int);")}, "00002_more.sql": fsys["00002_more.sql"]}
	if d, _ := querylog.MigrationsDigest(edited, 2); d == d2 {
		t.Error("an edited migration kept the digest")
	}
	if d3, _ := querylog.MigrationsDigest(fsys, 3); d3 == d2 {
		t.Error("a third migration kept the digest")
	}
	if _, err := querylog.MigrationsDigest(fstest.MapFS{"core.sql": {Data: []byte("x")}}, 2); err == nil {
		t.Error("a file without a version accepted")
	}
}
