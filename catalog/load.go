package catalog

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"followfeed/paper"
)

// Fields says how much of a paper Load reads.
type Fields int

const (
	// AllFields reads every field.
	AllFields Fields = iota
	// WithoutAbstract leaves Abstract empty: digests show no abstracts, and
	// abstracts are most of a paper's bytes.
	WithoutAbstract
)

// Load reads the papers with the given ids (papers.id) inside tx, so that a
// caller can read them in the snapshot it selected them in. Unknown ids are
// absent from the result. Dates a source never gave are the row's creation
// time, in UTC; withdrawn papers are read like any other (their keys are
// gone, so matching no longer finds them).
func Load(ctx context.Context, tx pgx.Tx, ids []int64, f Fields) (map[int64]paper.Paper, error) {
	if len(ids) == 0 {
		return map[int64]paper.Paper{}, nil
	}
	var out map[int64]paper.Paper
	var b pgx.Batch
	QueueLoad(&b, ids, f, func(got map[int64]paper.Paper) { out = got })
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// QueueLoad queues on b the statement Load runs, so that a caller can send
// it in one round trip with others of the same snapshot: when b's results
// are read (pgx.BatchResults.Close), done gets the papers Load would
// return, unless reading them failed (Close's error says why).
func QueueLoad(b *pgx.Batch, ids []int64, f Fields, done func(map[int64]paper.Paper)) {
	b.Queue(`
		SELECT id, arxiv_id, version, title, CASE WHEN $2 THEN '' ELSE abstract END, authors, primary_category, categories, institutions,
		       coalesce(doi, ''), coalesce(journal_ref, ''), coalesce(comments, ''),
		       coalesce(submitted_at, created_at), coalesce(updated_at, submitted_at, created_at),
		       coalesce(announced_at, created_at), abs_url, pdf_url
		FROM papers WHERE id = ANY($1)`, ids, f == WithoutAbstract).Query(func(rows pgx.Rows) error {
		out := make(map[int64]paper.Paper, len(ids))
		for rows.Next() {
			var id int64
			var p paper.Paper
			var authors []byte
			if err := rows.Scan(&id, &p.ArxivID, &p.Version, &p.Title, &p.Abstract, &authors, &p.PrimaryCategory,
				&p.Categories, &p.Institutions, &p.DOI, &p.JournalRef, &p.Comments, &p.SubmittedAt, &p.UpdatedAt,
				&p.AnnouncedAt, &p.AbsURL, &p.PDFURL); err != nil {
				return fmt.Errorf("reading paper: %w", err)
			}
			var err error
			if p.Authors, err = paper.DecodeAuthors(authors); err != nil {
				return fmt.Errorf("reading authors of paper %d: %w", id, err)
			}
			p.SubmittedAt, p.UpdatedAt, p.AnnouncedAt = p.SubmittedAt.UTC(), p.UpdatedAt.UTC(), p.AnnouncedAt.UTC()
			out[id] = p
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("loading %d papers: %w", len(ids), err)
		}
		done(out)
		return nil
	})
}

// QueueVersions queues on b the read of the row versions of the papers
// ids: when b's results are read, done gets each stored paper's version,
// a number that changes whenever anything stored in the paper's row
// changes (a new arXiv version, a correction, an enrichment, a
// withdrawal), so a process may keep what it derived from a paper (its
// keys, its words) under the paper's id and version and know it is
// current. It is the row's xmin, the transaction that last wrote it: an
// update writes a new row version with its own transaction's id, and
// freezing keeps the number. No row's fields are read; done gets the ids
// asked for only.
//
// The ids are read in runs (versionRuns): a digest batch asks for the
// versions of its windows' candidates, some thousand papers stored
// within a day, so mostly neighbours. One range scan of the primary key
// per run read such a batch's 1,079 versions in ~1.0 ms, where a probe
// per id (id = ANY) took ~2.0 ms, with a tenth of the buffer reads (358
// against 3,550; EXPLAIN ANALYZE at scale M, warm).
func QueueVersions(b *pgx.Batch, ids []int64, done func(map[int64]uint32)) {
	want := slices.Sorted(slices.Values(ids))
	want = slices.Compact(want)
	lo, hi := versionRuns(want)
	b.Queue(versionsSQL, lo, hi).QueryRow(func(row pgx.Row) error {
		var ids, vs []int64
		if err := row.Scan(&ids, &vs); err != nil {
			return fmt.Errorf("reading the versions of %d papers: %w", len(want), err)
		}
		out := make(map[int64]uint32, len(want))
		for i, id := range ids {
			// A run holds the papers between the ids asked for too.
			if _, ok := slices.BinarySearch(want, id); ok {
				out[id] = uint32(vs[i])
			}
		}
		done(out)
		return nil
	})
}

// versionsSQL reads the versions (xmin) of the papers with ids from $1[i]
// to $2[i], as one row of two arrays (ids, versions; NULL for none): a
// range scan of the primary key per run. OFFSET 0 keeps the subquery a
// subquery: flattened into the join, the generic plan, which cannot see
// how wide the runs are, read all of papers sequentially (20 s at scale
// M) rather than its index. One row, not one per paper, as the read
// state's marks are read (inboxsql.MarkedInRangesSQL).
const versionsSQL = `
	SELECT array_agg(p.id), array_agg(p.v) FROM unnest($1::bigint[], $2::bigint[]) AS r(lo, hi)
	CROSS JOIN LATERAL (
		SELECT id, xmin::text::bigint AS v FROM papers WHERE id BETWEEN r.lo AND r.hi OFFSET 0
	) p`

// maxVersionGap is the widest gap between two ids asked for that one run
// of QueueVersions spans: a range scan reads a row for some 0.8 µs, a
// run of its own costs a probe, some 2 µs, so up to three rows not asked
// for are cheaper to read than a new run.
const maxVersionGap = 4

// versionRuns returns the runs (from lo[i] to hi[i]) that cover ids
// (ascending, each once), each joining the ids at most maxVersionGap
// apart.
func versionRuns(ids []int64) (lo, hi []int64) {
	for _, id := range ids {
		if n := len(hi); n > 0 && id-hi[n-1] <= maxVersionGap {
			hi[n-1] = id
			continue
		}
		lo, hi = append(lo, id), append(hi, id)
	}
	return lo, hi
}

// HighSeq returns the high seq, the newest committed match-key seq: no
// row with a seq at or below it can commit later (see keyWritersLock).
func (st *Store) HighSeq(ctx context.Context) (int64, error) {
	var w int64
	if err := st.db.Pool.QueryRow(ctx, `SELECT high_seq FROM match_state`).Scan(&w); err != nil {
		return 0, fmt.Errorf("reading the high seq: %w", err)
	}
	return w, nil
}

// NewestIDs returns the ids of the n papers stored last that are not
// withdrawn, newest first: a backward scan of papers' primary key (ids
// grow with every paper stored), stopping after n live rows.
func NewestIDs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM papers WHERE deleted_at IS NULL ORDER BY id DESC LIMIT $1`, n)
	if err != nil {
		return nil, fmt.Errorf("reading the newest %d papers: %w", n, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading the newest %d papers: %w", n, err)
	}
	return ids, nil
}
