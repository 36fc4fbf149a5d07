package catalog

import (
	"context"
	"fmt"

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
// freezing keeps the number. A primary-key probe per id, no row's fields
// read.
func QueueVersions(b *pgx.Batch, ids []int64, done func(map[int64]uint32)) {
	b.Queue(`SELECT id, xmin::text::bigint FROM papers WHERE id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		out := make(map[int64]uint32, len(ids))
		var id, v int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error {
			out[id] = uint32(v)
			return nil
		}); err != nil {
			return fmt.Errorf("reading the versions of %d papers: %w", len(ids), err)
		}
		done(out)
		return nil
	})
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
