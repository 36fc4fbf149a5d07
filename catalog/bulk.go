package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
	"followfeed/search"
)

// The lab's loaders: what the benchmark and the soak write to papers,
// paper_keys, match_state, key_seq_times, search_hits and
// paper_search_hits goes through these, under keyWritersLock like every
// other write of those tables.

// BulkResult reports a BulkLoad.
type BulkResult struct {
	Papers, Keys   int
	FromSeq, ToSeq int64 // the key rows' (and search hits') seqs; 0, 0 when none were written
	// Hits and HitRows are BulkLoadMatching's: the (search, paper)
	// matches and the search_hits rows they are listed in.
	Hits, HitRows int
}

// bulkBatch is how many papers BulkLoad writes per COPY (their keys are
// one more).
const bulkBatch = 20_000

// BulkLoad writes papers, each with its match keys, with COPY, in tx, and
// moves the high seq past them: for generating datasets (the
// benchmark's), not for what a source sends. It holds keyWritersLock
// until tx ends, like Ingest. Papers get ids from the papers sequence in
// their order (database.NextIDs), the row Ingest writes for a new paper
// from src (version 0 is stored as 1; a paper without researcher ids is
// due for enrichment now) and a key row per Keys element, as a new
// paper's (new_paper, version, no replacement); the key rows of one paper
// take consecutive seqs in key order and the papers follow each other, so
// that seq follows the table's physical order, as paper_keys_seq_brin
// wants. Last, match_state.high_seq and key_seq_times move to the last seq
// (one row for the whole load).
//
// It skips everything else Ingest does: papers must be normalised already
// (Normalize) and are written as given; nothing is compared with stored
// papers (an arXiv id stored already fails the load on its unique key);
// no query matches are looked for, no identity observer sees the
// papers, no event rows are written and no match job is enqueued (no
// instant alert, instant channel or WebSub ping hears of them; feeds and
// digests whose follows and windows cover their seqs show them, as any
// stored papers).
func BulkLoad(ctx context.Context, tx pgx.Tx, papers iter.Seq[paper.Paper], src Source) (BulkResult, error) {
	return bulkLoad(ctx, tx, papers, src, false)
}

// BulkLoadMatching is BulkLoad that also does what an ingest does with
// the followed queries (follow.ActiveQueries, read under the lock):
// every paper is evaluated against them and the papers a search matches
// are listed in one search_hits row of its key (new papers, as an
// ingest's), with their paper_search_hits rows; those rows take their seqs
// after the key rows', and the high seq and key_seq_times move once, to
// the last. For generating a dataset whose followed queries have hits
// (the soak's simulated year); nothing else changes from BulkLoad (no
// match job, no identity observer).
func BulkLoadMatching(ctx context.Context, tx pgx.Tx, papers iter.Seq[paper.Paper], src Source) (BulkResult, error) {
	return bulkLoad(ctx, tx, papers, src, true)
}

func bulkLoad(ctx context.Context, tx pgx.Tx, papers iter.Seq[paper.Paper], src Source, match bool) (BulkResult, error) {
	var res BulkResult
	if src != SourceOAI && src != SourcePush {
		return res, fmt.Errorf("loading papers: unknown source %q", src)
	}
	if err := lockWriters(ctx, tx); err != nil {
		return res, err
	}
	var matched searchMatches
	hits := hitSet{}
	if match {
		norms, err := follow.ActiveQueries(ctx, tx)
		if err != nil {
			return res, err
		}
		if len(norms) > 0 {
			var c searchCache
			matched.set = c.compile(norms)
		}
	}
	var keys []keyRow
	err := database.Batches(papers, bulkBatch, func(batch []paper.Paper) error {
		ids, err := database.NextIDs(ctx, tx, "papers", "id", len(batch))
		if err != nil {
			return err
		}
		keys = keys[:0]
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"papers"}, []string{"id", "arxiv_id", "version", "title", "abstract", "authors",
			"primary_category", "categories", "institutions", "doi", "journal_ref", "comments", "submitted_at", "updated_at",
			"announced_at", "abs_url", "pdf_url", "source", "enrich_after"},
			pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
				p := &batch[i]
				p.Version = max(p.Version, 1)
				r := toRow(*p, src)
				authors, err := json.Marshal(r.Authors)
				if err != nil {
					return nil, err
				}
				start := len(keys)
				for _, k := range p.Keys() {
					keys = append(keys, keyRow{PaperID: ids[i], Key: k.Key, Version: p.Version, Cross: k.Cross, NewPaper: true})
				}
				slices.SortFunc(keys[start:], func(a, b keyRow) int { return strings.Compare(a.Key, b.Key) })
				return []any{ids[i], r.ArxivID, r.Version, r.Title, r.Abstract, json.RawMessage(authors),
					r.PrimaryCategory, r.Categories, r.Institutions, r.DOI, r.JournalRef, r.Comments, r.SubmittedAt, r.UpdatedAt,
					r.AnnouncedAt, r.AbsURL, r.PDFURL, r.Source, r.EnrichAfter}, nil
			})); err != nil {
			return fmt.Errorf("loading %d papers: %w", len(batch), err)
		}
		res.Papers += len(batch)
		if matched.len() > 0 {
			docs := make([]*search.Doc, len(batch))
			parallel(len(batch), func(i int) { docs[i] = batch[i].Doc() })
			for i, qis := range matched.set.Match(docs) {
				for _, qi := range qis {
					k := hitKind{key: matched.key(int(qi)), newPaper: true}
					hits[k] = append(hits[k], ids[i])
				}
			}
		}
		if len(keys) == 0 {
			return nil
		}
		// A block of seqs at once: every writer takes its seqs under
		// keyWritersLock, so nothing can take one in between.
		var to int64
		if err := tx.QueryRow(ctx, `SELECT setval('paper_key_seq', nextval('paper_key_seq') + $1 - 1)`, len(keys)).Scan(&to); err != nil {
			return fmt.Errorf("reserving %d seqs: %w", len(keys), err)
		}
		from := to - int64(len(keys)) + 1
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"paper_keys"},
			[]string{"paper_id", "key", "version", "cross_list", "replacement", "new_paper", "seq"},
			pgx.CopyFromSlice(len(keys), func(i int) ([]any, error) {
				k := &keys[i]
				return []any{k.PaperID, k.Key, k.Version, k.Cross, false, true, from + int64(i)}, nil
			})); err != nil {
			return fmt.Errorf("loading the %d keys of %d papers: %w", len(keys), len(batch), err)
		}
		if res.FromSeq == 0 {
			res.FromSeq = from
		}
		res.Keys, res.ToSeq = res.Keys+len(keys), to
		return nil
	})
	if err != nil {
		return res, err
	}
	if len(hits) > 0 {
		res.Hits, res.HitRows = hits.matches(), len(hits)
		from, to, err := hits.write(ctx, tx)
		if err != nil {
			return res, err
		}
		if res.FromSeq == 0 {
			res.FromSeq = from
		}
		res.ToSeq = max(res.ToSeq, to)
	}
	if res.ToSeq == 0 {
		return res, nil
	}
	return res, advanceHighSeq(ctx, tx, res.ToSeq)
}

// DeletePrefix deletes the papers whose arXiv id starts with prefix
// ("2901."), in tx, with their key rows and query matches (the
// foreign keys' cascades; paper_search_hits' trigger takes the papers out
// of the search_hits rows that list them), and returns how many it
// deleted: for taking generated papers off a dataset again (the
// benchmark's batch, the soak's harvest). It holds keyWritersLock until tx
// ends. Removed rows change what a snapshot holds below the high seq, so,
// as after a withdrawal, the high seq moves (a seq of its own, with no
// row) when any paper was deleted. Unlike a withdrawal it keeps nothing of
// the papers and tells no follower. An empty prefix is an error, not every
// paper.
func DeletePrefix(ctx context.Context, tx pgx.Tx, prefix string) (int, error) {
	if prefix == "" {
		return 0, fmt.Errorf("deleting papers: an empty prefix would delete every paper")
	}
	if err := lockWriters(ctx, tx); err != nil {
		return 0, err
	}
	// LIKE with the prefix escaped: papers_arxiv_id_key (C collation)
	// serves it as a range.
	like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
	tag, err := tx.Exec(ctx, `DELETE FROM papers WHERE arxiv_id LIKE $1`, like)
	if err != nil {
		return 0, fmt.Errorf("deleting the papers %s*: %w", prefix, err)
	}
	n := int(tag.RowsAffected())
	if n == 0 {
		return 0, nil
	}
	return n, bumpHighSeq(ctx, tx)
}

// RemoveSearchHits deletes every query match (search_hits and
// paper_search_hits), in tx, and returns how many search_hits rows it
// deleted: for taking generated queries off a dataset again (the
// benchmark's), with their follows (follow.RemoveKind). It holds
// keyWritersLock until tx ends and moves the high seq as DeletePrefix
// does.
func RemoveSearchHits(ctx context.Context, tx pgx.Tx) (int, error) {
	if err := lockWriters(ctx, tx); err != nil {
		return 0, err
	}
	// search_hits first: the trigger on paper_search_hits' deletes then
	// finds no row to take the papers out of.
	tag, err := tx.Exec(ctx, `DELETE FROM search_hits`)
	if err != nil {
		return 0, fmt.Errorf("deleting the query matches: %w", err)
	}
	pt, err := tx.Exec(ctx, `DELETE FROM paper_search_hits`)
	if err != nil {
		return 0, fmt.Errorf("deleting the papers' query matches: %w", err)
	}
	if tag.RowsAffected() == 0 && pt.RowsAffected() == 0 {
		return 0, nil
	}
	return int(tag.RowsAffected()), bumpHighSeq(ctx, tx)
}

// bumpHighSeq advances the high seq by a seq of its own, with no row:
// a private feed's validator, cached per high seq (feeds.Validators), is
// computed again after rows below it were removed. The caller holds
// keyWritersLock.
func bumpHighSeq(ctx context.Context, tx pgx.Tx) error {
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT nextval('paper_key_seq')`).Scan(&seq); err != nil {
		return fmt.Errorf("taking a seq for removed rows: %w", err)
	}
	return advanceHighSeq(ctx, tx, seq)
}
