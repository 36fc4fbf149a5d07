package querylog

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Check tells whether sql still fits the schema of conn's database, without
// running it: PREPARE resolves every table, column, function, operator and
// type it names and the types of its parameters (a COPY is prepared as the
// SELECT of its columns); and each table it inserts or copies into must
// have no NOT NULL column without a default that the statement leaves out
// (which PREPARE does not see, and every such INSERT would fail at run
// time). It returns nil when the statement fits, else an error saying
// why. conn must not be inside a transaction that failed.
func Check(ctx context.Context, conn *pgx.Conn, sql string) error {
	text := sql
	switch k := KindOf(sql); k {
	case KindPrepare:
	case KindCopy:
		var ok bool
		if text, ok = CopyAsSelect(sql); !ok {
			return fmt.Errorf("a COPY that is not COPY table (columns) FROM STDIN cannot be checked")
		}
	default:
		return fmt.Errorf("a %s statement cannot be checked with PREPARE", firstWord(sql))
	}
	// The simple protocol: the text's $n are the prepared statement's
	// parameters, typed by PREPARE as the server typed them for the
	// release (pgx sends no parameter types).
	if _, err := conn.Exec(ctx, "PREPARE querylog_check AS "+text, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "DEALLOCATE querylog_check", pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	for _, t := range Targets(sql) {
		rows, err := conn.Query(ctx, `
			SELECT attname FROM pg_attribute
			WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped
			  AND attnotnull AND NOT atthasdef AND attidentity = '' AND attgenerated = ''
			ORDER BY attnum`, t.Table)
		if err != nil {
			return err
		}
		required, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		var missing []string
		for _, c := range required {
			if !slices.Contains(t.Columns, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("it writes rows into %s without %s, NOT NULL with no default: every such row would fail",
				t.Table, strings.Join(missing, ", "))
		}
	}
	return nil
}

// MigrationsDigest identifies the migrations of fsys (goose files named
// <version>_<name>.sql) up to version upTo: a SHA-256 over each one's
// version and content in version order, so renaming a file keeps it and
// editing one changes it.
func MigrationsDigest(fsys fs.FS, upTo int64) (string, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return "", err
	}
	type mig struct {
		version int64
		name    string
	}
	var ms []mig
	for _, n := range names {
		v, err := Version(n)
		if err != nil {
			return "", err
		}
		if v <= upTo {
			ms = append(ms, mig{v, n})
		}
	}
	slices.SortFunc(ms, func(a, b mig) int { return cmp.Compare(a.version, b.version) })
	h := sha256.New()
	for _, m := range ms {
		b, err := fs.ReadFile(fsys, m.name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d\x00%d\x00", m.version, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("sha256:%s (%d migrations)", hex.EncodeToString(h.Sum(nil)), len(ms)), nil
}

// Version is the version of a goose migration file name
// ("00021_fediverse.sql" is 21).
func Version(name string) (int64, error) {
	base := path.Base(name)
	digits, _, ok := strings.Cut(base, "_")
	v, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("querylog: %s is not named <version>_<name>.sql", base)
	}
	return v, nil
}
