package catalog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/internal/text"
	"followfeed/paper"
)

// The SQL other packages read paper's tables with (papers, paper_keys,
// search_hits, match_state, key_seq_times): the store writes them, users
// (match's feed and match-job statements, feeds' public versions, the high
// seq of digests and channels) read them only through the names below,
// whole queries or fragments of their own statements (docs/ARCHITECTURE.md,
// Rules). A change of these tables' columns or indexes starts here: every
// user refers to one of these names.

// KeysTable is paper_keys, the key rows: per (paper_id, key, version,
// event), the row's seq, cross_list (the key is a category known only from
// a cross-list), replacement (written by a new version), new_paper (the
// paper's first rows), event and detail (a followed paper's events).
// Users may rely on its primary key (paper_id, key, …; a paper's keys),
// paper_keys_key_seq_idx ((key, seq DESC) including paper_id, cross_list,
// replacement and new_paper: a key's newest rows, index-only) and
// paper_keys_seq_brin (a seq range).
const KeysTable = "paper_keys"

// HitsTable is search_hits, a query's matches: per (key, seq) of a
// query: key, the papers (paper_ids) it matched in that seq, with
// replacement and new_paper as in paper_keys (never cross-lists). Users
// may rely on its primary key (key, seq: a search's newest rows) and
// search_hits_seq_idx (a seq range).
const HitsTable = "search_hits"

// PapersTable is papers: id, arxiv_id, title, modified_at (what a feed
// shows changed) and deleted_at, by primary key.
const PapersTable = "papers"

// HighSeqTable is match_state: its one row's high_seq is the high seq
// (every key row at or below it is committed), for a statement that joins
// the row; HighSeqSQL is the scalar.
const HighSeqTable = "match_state"

// HighSeqSQL is the high seq as a scalar subquery, which the planner counts
// as one row whatever match_state's statistics say.
const HighSeqSQL = `(SELECT high_seq FROM match_state)`

// SeqTimeSQL is when the key rows of seq (an expression of the caller's
// statement; NULL when it is not positive) were written, NULL when unknown:
// the first key_seq_times row at or after it (its primary key).
func SeqTimeSQL(seq string) string {
	return `(SELECT t.at FROM key_seq_times t WHERE ` + seq + ` > 0 AND t.to_seq >= ` + seq + ` ORDER BY t.to_seq LIMIT 1)`
}

// KeyRowsInWindowSQL reads, for each key of $1 (sorted: the index is
// walked in order), its newest rows in the window ($2, $3], at most $4
// (paper_keys_key_seq_idx, index-only): the key's ordinal in $1, paper_id,
// seq, cross_list, replacement, new_paper.
const KeyRowsInWindowSQL = `
	SELECT k.i::int, pk.paper_id, pk.seq, pk.cross_list, pk.replacement, pk.new_paper
	FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
	CROSS JOIN LATERAL (
		SELECT pk.paper_id, pk.seq, pk.cross_list, pk.replacement, pk.new_paper FROM paper_keys pk
		WHERE pk.key = k.key AND pk.seq > $2 AND pk.seq <= $3
		ORDER BY pk.seq DESC LIMIT $4
	) pk`

// HitsInWindowSQL reads, for each query key of $1, the papers of
// its newest search_hits rows in the window ($2, $3], at most $4, in each
// row's order (search_hits_pkey), with KeyRowsInWindowSQL's columns
// (cross_list false).
const HitsInWindowSQL = `
	SELECT k.i::int, h.paper_id, h.seq, false, h.replacement, h.new_paper
	FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
	CROSS JOIN LATERAL (
		SELECT u.paper_id, h.seq, h.replacement, h.new_paper
		FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) WITH ORDINALITY AS u(paper_id, o)
		WHERE h.key = k.key AND h.seq > $2 AND h.seq <= $3
		ORDER BY h.seq DESC, u.o LIMIT $4
	) h`

// EventsSQL reads the events (rows with an event) of the papers $1 under
// the keys $2 (paper follows' keys) with a seq in ($3, $4], newest first:
// paper_id, key, version, event, detail (empty for none), seq. A probe of the primary
// key (paper_id, key, …) per paper and key.
const EventsSQL = `
			SELECT paper_id, key, version, event, coalesce(detail, ''), seq FROM paper_keys
			WHERE paper_id = ANY($1) AND key = ANY($2) AND event <> '' AND seq > $3 AND seq <= $4
			ORDER BY seq DESC`

// HighSeqIn returns the high seq as of tx's snapshot.
func HighSeqIn(ctx context.Context, tx pgx.Tx) (int64, error) {
	var high int64
	if err := tx.QueryRow(ctx, `SELECT high_seq FROM match_state`).Scan(&high); err != nil {
		return 0, fmt.Errorf("reading high_seq: %w", err)
	}
	return high, nil
}

// LiveID returns the id of the paper arxivID in tx, 0 when no such paper
// is stored or it was deleted.
func LiveID(ctx context.Context, tx pgx.Tx, arxivID string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT coalesce((SELECT id FROM papers WHERE arxiv_id = $1 AND deleted_at IS NULL), 0)`, arxivID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("looking up paper %s: %w", arxivID, err)
	}
	return id, nil
}

// LivePaper is the stored paper a user names by arxivID (any form
// paper.ParseArxivID reads), without its abstract, for the writes that
// record something about one paper (a user's state of it, their
// feedback): its id in tx and the paper. An id that is no arXiv id is an
// apperr.Invalid naming "arxiv_id"; a paper not stored (or withdrawn) an
// apperr.NotFound.
func LivePaper(ctx context.Context, tx pgx.Tx, arxivID string) (int64, paper.Paper, error) {
	id, _, err := paper.ParseArxivID(arxivID)
	if err != nil {
		return 0, paper.Paper{}, apperr.InvalidField("arxiv_id", "%q is not an arXiv id; ids look like 2202.02326 or astro-ph/9901001", text.Truncate(arxivID, 60))
	}
	paperID, err := LiveID(ctx, tx, id)
	if err != nil {
		return 0, paper.Paper{}, err
	}
	if paperID == 0 {
		return 0, paper.Paper{}, apperr.New(apperr.NotFound, "no paper arXiv:%s is stored here", id)
	}
	papers, err := Load(ctx, tx, []int64{paperID}, WithoutAbstract)
	if err != nil {
		return 0, paper.Paper{}, err
	}
	return paperID, papers[paperID], nil
}
