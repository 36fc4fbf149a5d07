package tables

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "followfeed/"

// TestOwnersOnly: no package the product binary links names, in a string
// literal of its own, a table another package owns. A package reads
// another's tables through the owner's functions or the owner's exported
// SQL fragments, which it uses by name (docs/ARCHITECTURE.md, Rules).
func TestOwnersOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if not .Standard}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{"\t"}}{{join .GoFiles " "}}{{end}}`,
		module+"cmd/followfeed").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 3 || !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		for _, name := range strings.Fields(f[2]) {
			for _, use := range foreignTables(t, pkg, filepath.Join(f[1], name)) {
				if rel, err := filepath.Rel(root, use.pos.Filename); err == nil {
					use.pos.Filename = rel
				}
				t.Errorf("%s: package %s names %s, which package %s owns: read it through %s's functions or its exported SQL fragments",
					use.pos, pkg, use.table, OwnerOf(use.table), OwnerOf(use.table))
			}
			scanned++
		}
	}
	if scanned < 50 {
		t.Fatalf("scanned %d files: go list found no product", scanned)
	}
}

type use struct {
	pos   token.Position
	table string
}

// foreignTables returns the tables that the string literals of the Go file
// at path name and that are owned by another package than pkg.
func foreignTables(t *testing.T, pkg, path string) []use {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []use
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
		}
		for _, table := range Named(s) {
			if !MayName(pkg, table) {
				out = append(out, use{fset.Position(lit.Pos()), table})
			}
		}
		return true
	})
	return out
}

// The scan itself: a literal that names another package's table is found
// (so TestOwnersOnly can fail), a fragment used by name is not.
func TestForeignTablesFindsOnlyLiterals(t *testing.T) {
	dir := t.TempDir()
	src := `package notify

import "followfeed/paper"

const own = ` + "`SELECT 1 FROM digests d JOIN digest_schedules s USING (user_id)`" + `
const theirs = ` + "`SELECT u.email FROM digests d, users u WHERE u.id = d.user_id`" + `
const composed = ` + "`SELECT high_seq FROM ` + paper.HighSeqRow" + `
`
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := foreignTables(t, "notify", path)
	if len(got) != 1 || got[0].table != "users" || got[0].pos.Line != 6 {
		t.Errorf("foreign tables = %v, want users on line 6", got)
	}
}

func TestNamed(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{`SELECT 1 FROM users WHERE id = $1`, []string{"users"}},
		{`SELECT f.version, m.high_seq FROM user_feeds f, match_state m WHERE f.token_hash = $1`, []string{"user_feeds", "match_state"}},
		{`select * from Papers p join PAPER_KEYS k on k.paper_id = p.id, follows`, []string{"papers", "paper_keys", "follows"}},
		{`SELECT * FROM unnest($1::text[]) AS k(key), LATERAL (SELECT 1 FROM paper_keys) x, ONLY papers`, []string{"paper_keys", "papers"}},
		{`SELECT extract(epoch FROM now()) FROM (SELECT 1 FROM users) u, identities i`, []string{"users", "identities"}},
		{`INSERT INTO follows (user_id) SELECT id FROM users ON CONFLICT DO UPDATE SET x = 1`, []string{"follows", "users"}},
		{`UPDATE digests SET sent = true FROM digest_schedules s WHERE s.user_id = digests.user_id`, []string{"digests", "digest_schedules"}},
		{`DELETE FROM channel_events; TRUNCATE channels; LOCK TABLE papers`, []string{"channel_events", "channels", "papers"}},
		{`SELECT kind FROM river.river_job`, []string{"river.river_job"}},
		{`SELECT 'FROM users' -- FROM papers
		  /* JOIN follows */ FROM "identity_keys"`, []string{"identity_keys"}},
		{`WITH r AS (SELECT 1) SELECT * FROM r JOIN search_hits h USING (key)`, []string{"r", "search_hits"}},
		{`reading from the users' feeds`, []string{"the"}},
	} {
		got := Named(c.sql)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("Named(%q) = %q, want %q", c.sql, got, c.want)
		}
	}
	if OwnerOf("river.river_job") != "worker" || OwnerOf("r") != "" || OwnerOf("paper_keys") != "catalog" {
		t.Error("OwnerOf: River's tables are worker's, a CTE nobody's, paper_keys paper's")
	}
	for _, c := range []struct {
		pkg, table string
		may        bool
	}{
		{"identity", "identity_keys", true},
		{"identity/registrysql", "identity_keys", true},
		{"identityx", "identity_keys", false},
		{"match", "identity_keys", false},
		{"match", "instant_follows", true},
		{"match", "r", true},
		{"httpapi", "river.river_job", false},
	} {
		if got := MayName(c.pkg, c.table); got != c.may {
			t.Errorf("MayName(%q, %q) = %v, want %v", c.pkg, c.table, got, c.may)
		}
	}
}

// TestOwnerCoversTheMigrations: Owner lists exactly the tables and views
// the migrations leave (created in an Up section, not dropped by a later
// one).
func TestOwnerCoversTheMigrations(t *testing.T) {
	files, err := filepath.Glob("../../migrations/sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	sort.Strings(files)
	create := regexp.MustCompile(`(?i)\bCREATE\s+(?:UNLOGGED\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)
	drop := regexp.MustCompile(`(?i)\bDROP\s+(?:TABLE|VIEW)\s+(?:IF\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)
	have := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(b), "-- +goose Down")
		for _, m := range create.FindAllStringSubmatch(up, -1) {
			have[strings.ToLower(m[1])] = true
		}
		for _, m := range drop.FindAllStringSubmatch(up, -1) {
			delete(have, strings.ToLower(m[1]))
		}
	}
	for table := range have {
		if Owner[table] == "" {
			t.Errorf("table %s of the migrations has no owner in tables.Owner", table)
		}
	}
	for table := range Owner {
		if !have[table] {
			t.Errorf("tables.Owner names %s, which the migrations do not create", table)
		}
	}
}

// TestOwnerMatchesTheArchitecture: the "writes tables" column of
// docs/ARCHITECTURE.md's package table names, for each package, exactly
// the tables Owner gives it.
func TestOwnerMatchesTheArchitecture(t *testing.T) {
	b, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, doc, ok := strings.Cut(string(b), "\n## Packages")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no Packages section")
	}
	doc, _, _ = strings.Cut(doc, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	documented := map[string]string{}
	river := false
	for line := range strings.Lines(doc) {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(line, "| `") {
			continue
		}
		pkgs := code.FindAllStringSubmatch(cells[1], -1)
		if len(pkgs) == 0 {
			continue
		}
		pkg := pkgs[0][1]
		for _, m := range code.FindAllStringSubmatch(cells[3], -1) {
			if Owner[m[1]] == "" {
				continue // not a table: a row's key, a path
			}
			if prev, dup := documented[m[1]]; dup && prev != pkg {
				t.Errorf("docs/ARCHITECTURE.md gives table %s to %s and %s", m[1], prev, pkg)
			}
			documented[m[1]] = pkg
		}
		if pkg == RiverOwner && strings.Contains(cells[3], "River") {
			river = true
		}
	}
	for table, pkg := range Owner {
		if documented[table] != pkg {
			t.Errorf("docs/ARCHITECTURE.md: table %s is written by %q there, by %q in tables.Owner", table, documented[table], pkg)
		}
	}
	if !river {
		t.Errorf("docs/ARCHITECTURE.md: package %s's row does not say it writes River's tables", RiverOwner)
	}
}
