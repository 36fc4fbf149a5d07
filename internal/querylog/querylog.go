// Package querylog holds the SQL a release of followfeed sends to
// PostgreSQL, as the server logged it (log_statement=all, jsonlog): reading
// such a log (ReadLog), the file that keeps the previous release's
// statements (migrations/testdata/previous-release-queries.sql: Write,
// Parse) and the check that one of them still fits a schema (Check:
// PREPARE, and an INSERT's or COPY's NOT NULL columns). The rolling-upgrade
// soak scenario captures and checks with it, migrations' tests hold the
// committed file against the current schema with it; the product binary
// never links it.
package querylog

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Origins of a statement: whose SQL it is.
const (
	// OriginFollowfeed is followfeed's own SQL.
	OriginFollowfeed = "followfeed"
	// OriginRiver is River's SQL (its driver's and its UI's: sqlc
	// statements, which begin with "-- name: ").
	OriginRiver = "river"
	// OriginGoose is goose's version-table SQL (the schema check at start).
	OriginGoose = "goose"
)

// Statement is one distinct statement a release sent.
type Statement struct {
	// SQL is the text as sent (trimmed), placeholders $n as they were.
	SQL string
	// Origin is OriginFollowfeed, OriginRiver or OriginGoose.
	Origin string
	// Processes are the process kinds that sent it ("api", "worker"),
	// sorted.
	Processes []string
}

// OriginOf tells whose SQL text is.
func OriginOf(sql string) string {
	switch {
	case strings.HasPrefix(strings.TrimSpace(sql), "-- name: "):
		return OriginRiver
	case strings.Contains(sql, "goose_db_version"):
		return OriginGoose
	}
	return OriginFollowfeed
}

// Key is the form two texts of one statement share: whitespace runs
// collapsed to one space.
func Key(sql string) string { return strings.Join(strings.Fields(sql), " ") }

// Set collects distinct statements; the zero value is not ready, use
// NewSet.
type Set struct {
	byKey map[string]*Statement
}

// NewSet returns a set holding stmts.
func NewSet(stmts ...Statement) *Set {
	s := &Set{byKey: map[string]*Statement{}}
	for _, st := range stmts {
		for _, p := range st.Processes {
			s.Add(st.SQL, p)
		}
		if len(st.Processes) == 0 {
			s.Add(st.SQL, "")
		}
	}
	return s
}

// Add records sql as sent by process (empty: unknown). Texts that differ
// only in whitespace are one statement.
func (s *Set) Add(sql, process string) {
	sql = strings.TrimSpace(sql)
	if sql == "" {
		return
	}
	k := Key(sql)
	st := s.byKey[k]
	if st == nil {
		st = &Statement{SQL: sql, Origin: OriginOf(sql)}
		s.byKey[k] = st
	}
	if process != "" && !slices.Contains(st.Processes, process) {
		st.Processes = append(st.Processes, process)
		slices.Sort(st.Processes)
	}
}

// Has reports whether the set holds sql (in any whitespace).
func (s *Set) Has(sql string) bool { return s.byKey[Key(sql)] != nil }

// Len is the number of distinct statements.
func (s *Set) Len() int { return len(s.byKey) }

// Statements returns the statements ordered by origin (followfeed, goose,
// river) and text, so a file written from them diffs well.
func (s *Set) Statements() []Statement {
	out := make([]Statement, 0, len(s.byKey))
	for _, st := range s.byKey {
		out = append(out, *st)
	}
	rank := map[string]int{OriginFollowfeed: 0, OriginGoose: 1, OriginRiver: 2}
	slices.SortFunc(out, func(a, b Statement) int {
		return cmp.Or(cmp.Compare(rank[a.Origin], rank[b.Origin]), cmp.Compare(Key(a.SQL), Key(b.SQL)))
	})
	return out
}

// Entry is one line of a jsonlog (the fields ReadLog uses).
type Entry struct {
	Timestamp   string `json:"timestamp"` // "2026-12-04 19:31:56.992 UTC"
	DBName      string `json:"dbname"`
	Application string `json:"application_name"`
	Message     string `json:"message"`
}

// logged is a statement message of log_statement: "statement: …" (the
// simple protocol) or "execute <name>: …" (the extended protocol's
// Execute; <unnamed> or a prepared statement's name, a portal's after a
// slash).
var logged = regexp.MustCompile(`(?s)^(?:statement|execute [^:\s]+): (.*)$`)

// ReadLog reads a PostgreSQL jsonlog and adds to set every statement of
// the entries keep accepts, with process(entry) as its sender. A simple
// protocol message holding several statements adds each; session and
// transaction commands (BEGIN, SET, LISTEN, …), which no schema changes,
// are left out. It returns how many statement messages it read.
func ReadLog(r io.Reader, set *Set, keep func(Entry) bool, process func(Entry) string) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return n, fmt.Errorf("querylog: a log line is not JSON (%v): %.120s", err, line)
		}
		m := logged.FindStringSubmatch(e.Message)
		if m == nil || !keep(e) {
			continue
		}
		n++
		for _, stmt := range Split(m[1]) {
			if KindOf(stmt) != KindSession {
				set.Add(stmt, process(e))
			}
		}
	}
	return n, sc.Err()
}

// Kinds of statement, by what Check can do with them.
const (
	// KindPrepare: SELECT, INSERT, UPDATE, DELETE, MERGE, VALUES, TABLE
	// and WITH: PREPARE type-checks them.
	KindPrepare = "prepare"
	// KindCopy: COPY … FROM STDIN, checked as a SELECT of its columns.
	KindCopy = "copy"
	// KindSession: transaction and session commands, which name nothing
	// a migration changes.
	KindSession = "session"
	// KindOther: anything else (DDL, LOCK, …): Check refuses it.
	KindOther = "other"
)

// KindOf classifies sql by its first keyword (after comments).
func KindOf(sql string) string {
	switch firstWord(sql) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "TABLE", "WITH":
		return KindPrepare
	case "COPY":
		return KindCopy
	case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE", "SET", "RESET", "SHOW",
		"LISTEN", "UNLISTEN", "NOTIFY", "DISCARD", "DEALLOCATE", "":
		return KindSession
	}
	return KindOther
}

// firstWord is the first keyword of sql, upper-cased, after whitespace,
// comments and opening parentheses.
func firstWord(sql string) string {
	s := sql
	for {
		s = strings.TrimLeft(s, " \t\r\n(")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return ""
			}
			s = s[i+2:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
			if end < 0 {
				end = len(s)
			}
			return strings.ToUpper(s[:end])
		}
	}
}

// Split splits a simple-protocol message into its statements at the
// semicolons outside quotes, comments and dollar quoting; empty ones are
// dropped.
func Split(sql string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(sql[start:end]); s != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"':
			for i++; i < len(sql); i++ {
				if sql[i] == c {
					if i+1 < len(sql) && sql[i+1] == c { // doubled quote
						i++
						continue
					}
					break
				}
			}
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(sql)
			}
		case c == '$':
			if tag := dollarTag.FindString(sql[i:]); tag != "" {
				if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
					i += len(tag) + j + len(tag) - 1
				} else {
					i = len(sql)
				}
			}
		case c == ';':
			emit(i)
			start = i + 1
		}
	}
	emit(len(sql))
	return out
}

// dollarTag is a dollar quote's opening tag ($$ or $name$; not $1).
var dollarTag = regexp.MustCompile(`^\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$`)

// unquoteIdent returns an identifier as PostgreSQL names it: a quoted one
// as written, an unquoted one lower-cased.
func unquoteIdent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// splitIdents splits a column list ("a, \"b\"") into names.
func splitIdents(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, unquoteIdent(f))
		}
	}
	return out
}

// quoteIdent quotes a name for SQL.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

const identRE = `(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z_0-9$]*)`

// copyFrom is COPY table (columns) FROM STDIN, as pgx sends it.
var copyFrom = regexp.MustCompile(`(?is)^\s*copy\s+(` + identRE + `(?:\s*\.\s*` + identRE + `)?)\s*\(([^)]*)\)\s*from\s+stdin`)

// insertInto finds each INSERT INTO table [AS alias] (columns) of a
// statement (data-modifying CTEs included).
var insertInto = regexp.MustCompile(`(?is)\binsert\s+into\s+(` + identRE + `(?:\s*\.\s*` + identRE + `)?)\s*(?:as\s+` + identRE + `\s*)?\(([^)]*)\)`)

// Target is a table a statement writes rows into with the columns it
// gives.
type Target struct {
	Table   string // as written (quoted parts kept), for to_regclass
	Columns []string
}

// Targets returns the tables sql inserts or copies into, with the
// columns it gives each.
func Targets(sql string) []Target {
	var out []Target
	if m := copyFrom.FindStringSubmatch(sql); m != nil {
		out = append(out, Target{Table: m[1], Columns: splitIdents(m[2])})
	}
	for _, m := range insertInto.FindAllStringSubmatch(sql, -1) {
		out = append(out, Target{Table: m[1], Columns: splitIdents(m[2])})
	}
	return out
}

// CopyAsSelect turns COPY table (columns) FROM STDIN into the SELECT of
// those columns from that table, which PREPARE can check; ok is false for
// any other text.
func CopyAsSelect(sql string) (string, bool) {
	m := copyFrom.FindStringSubmatch(sql)
	if m == nil {
		return "", false
	}
	cols := splitIdents(m[2])
	for i, c := range cols {
		cols[i] = quoteIdent(c)
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + m[1], true
}

// number is a statement marker of the file: "-- statement 12: followfeed, api worker".
var marker = regexp.MustCompile(`^-- statement (\d+): (\w+)(?:, ([a-z ]*))?$`)

// File is the previous release's statements and where they come from.
type File struct {
	// Release is the commit of the release that sent them.
	Release string
	// Schema is the last migration of that release (its schema version).
	Schema int64
	// Migrations is MigrationsDigest of that release's migrations.
	Migrations string
	// Captured says when and how (one line).
	Captured string
	// Notes are further header lines (how to re-capture, …).
	Notes []string
	// Statements are the statements, in Set order.
	Statements []Statement
}

// Write writes f in the file format: a header of "-- key: value" lines
// and notes, then each statement after its marker line.
func (f *File) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("-- The previous release's SQL, held against the current schema by migrations' TestPreviousReleaseQueries.\n")
	fmt.Fprintf(&b, "-- release: %s\n-- schema: %d\n-- migrations: %s\n-- captured: %s\n", f.Release, f.Schema, f.Migrations, oneLine(f.Captured))
	counts := map[string]int{}
	for _, s := range f.Statements {
		counts[s.Origin]++
	}
	fmt.Fprintf(&b, "-- statements: %d (%d followfeed, %d goose, %d river)\n", len(f.Statements), counts[OriginFollowfeed], counts[OriginGoose], counts[OriginRiver])
	for _, n := range f.Notes {
		fmt.Fprintf(&b, "-- %s\n", oneLine(n))
	}
	for i, s := range f.Statements {
		fmt.Fprintf(&b, "\n-- statement %d: %s", i+1, s.Origin)
		if len(s.Processes) > 0 {
			fmt.Fprintf(&b, ", %s", strings.Join(s.Processes, " "))
		}
		b.WriteString("\n" + strings.TrimSpace(s.SQL) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Parse reads a file Write wrote.
func Parse(data string) (*File, error) {
	f := &File{}
	var cur *Statement
	var body []string
	flush := func() {
		if cur != nil {
			cur.SQL = strings.TrimSpace(strings.Join(body, "\n"))
			f.Statements = append(f.Statements, *cur)
		}
		body = nil
	}
	for i, line := range strings.Split(data, "\n") {
		if m := marker.FindStringSubmatch(line); m != nil {
			flush()
			if n, _ := strconv.Atoi(m[1]); n != len(f.Statements)+1 {
				return nil, fmt.Errorf("querylog: line %d: statement %s out of order (want %d)", i+1, m[1], len(f.Statements)+1)
			}
			cur = &Statement{Origin: m[2], Processes: strings.Fields(m[3])}
			continue
		}
		if cur != nil {
			body = append(body, line)
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "-- "), ": ")
		if !ok || !strings.HasPrefix(line, "-- ") {
			continue
		}
		switch k {
		case "release":
			f.Release = v
		case "schema":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("querylog: line %d: schema %q is not a version", i+1, v)
			}
			f.Schema = n
		case "migrations":
			f.Migrations = v
		case "captured":
			f.Captured = v
		}
	}
	flush()
	for i, s := range f.Statements {
		if s.SQL == "" {
			return nil, fmt.Errorf("querylog: statement %d is empty", i+1)
		}
	}
	if f.Release == "" || f.Schema == 0 || f.Migrations == "" {
		return nil, fmt.Errorf("querylog: the header lacks release, schema or migrations")
	}
	return f, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
