package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Query matches are stored one row per (search, batch, kind of
// match) in search_hits, with the matched papers as an array, instead of a
// paper_keys row per (search, paper): at 100,000 followed queries a
// 5,000-paper batch has some 400,000 matches in 27,000 rows. Each row takes
// one seq from paper_key_seq under keyWritersLock, so seq windows (the
// match job, digests, channels) and match_state.high_seq cover them like
// key rows; its papers share that seq. paper_search_hits lists, per paper,
// the seqs of the rows that name it (migrations/sql/00016_search_hits.sql).

// hitKind is what one search_hits row stands for: a search key and which
// kind of match its papers are (flags as paper_keys rows have them).
type hitKind struct {
	key         string
	replacement bool // a new version of a paper the search matched before
	newPaper    bool // papers this ingest stored first
}

// hitSet collects a write's search hits: the papers of each row.
type hitSet map[hitKind][]int64

// add records that the search of k matched paper id.
func (h hitSet) add(k hitKind, id int64) { h[k] = append(h[k], id) }

// addStored records the hits of a stored paper: searches (keys) it matches
// now and did not before are new matches; with a new version (replacing),
// the ones it matched before, whether or not they still match, are
// replacements (as for key rows: followers who opted in hear of the new
// version). It reports whether it recorded any.
func (h hitSet) addStored(old *stored, searches []string, replacing bool) bool {
	n := 0
	for _, k := range searches {
		switch {
		case !old.searches[k]:
			h.add(hitKind{key: k}, old.id)
			n++
		case replacing:
			h.add(hitKind{key: k, replacement: true}, old.id)
			n++
		}
	}
	if replacing {
		for k := range old.searches {
			if !slices.Contains(searches, k) {
				h.add(hitKind{key: k, replacement: true}, old.id)
				n++
			}
		}
	}
	return n > 0
}

// matches counts the (search, paper) matches in h.
func (h hitSet) matches() int {
	n := 0
	for _, ids := range h {
		n += len(ids)
	}
	return n
}

// write inserts h's rows, one per kind with its papers, and adds their
// seqs to paper_search_hits, and returns the seq range (0, 0 when h is
// empty). The caller holds keyWritersLock: the block of seqs is reserved
// at once, nothing else can take one in between. Rows are written with
// COPY in key order (search_hits_pkey leaf after leaf), seqs following that
// order; the papers of rows written with their paper's first insert
// (newPaper) can have no paper_search_hits row yet and are copied too, the
// others merged into theirs.
func (h hitSet) write(ctx context.Context, tx pgx.Tx) (from, to int64, err error) {
	if len(h) == 0 {
		return 0, 0, nil
	}
	kinds := make([]hitKind, 0, len(h))
	for k, ids := range h {
		slices.Sort(ids)
		h[k] = slices.Compact(ids)
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b hitKind) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(btoi(a.replacement), btoi(b.replacement)); c != 0 {
			return c
		}
		return cmp.Compare(btoi(a.newPaper), btoi(b.newPaper))
	})
	if err := tx.QueryRow(ctx, `SELECT setval('paper_key_seq', nextval('paper_key_seq') + $1 - 1)`, len(kinds)).Scan(&to); err != nil {
		return 0, 0, fmt.Errorf("reserving %d seqs: %w", len(kinds), err)
	}
	from = to - int64(len(kinds)) + 1
	fresh := map[int64][]int64{}
	stored := map[int64][]int64{}
	for i, k := range kinds {
		seq := from + int64(i)
		for _, id := range h[k] {
			if k.newPaper {
				fresh[id] = append(fresh[id], seq)
			} else {
				stored[id] = append(stored[id], seq)
			}
		}
	}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"search_hits"},
		[]string{"key", "seq", "replacement", "new_paper", "paper_ids"},
		pgx.CopyFromSlice(len(kinds), func(i int) ([]any, error) {
			k := kinds[i]
			return []any{k.key, from + int64(i), k.replacement, k.newPaper, h[k]}, nil
		}))
	if err != nil {
		return 0, 0, fmt.Errorf("writing %d search hits: %w", len(kinds), err)
	}
	if n != int64(len(kinds)) {
		return 0, 0, fmt.Errorf("wrote %d of %d search hits", n, len(kinds))
	}
	if err := writePaperHits(ctx, tx, fresh, stored); err != nil {
		return 0, 0, err
	}
	return from, to, nil
}

// writePaperHits adds seqs to the papers' paper_search_hits rows: fresh
// papers (stored by this transaction, no row yet) by COPY in paper order,
// the others by an upsert that appends.
func writePaperHits(ctx context.Context, tx pgx.Tx, fresh, stored map[int64][]int64) error {
	if len(fresh) > 0 {
		ids := make([]int64, 0, len(fresh))
		for id := range fresh {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"paper_search_hits"}, []string{"paper_id", "seqs"},
			pgx.CopyFromSlice(len(ids), func(i int) ([]any, error) { return []any{ids[i], fresh[ids[i]]}, nil }))
		if err != nil {
			return fmt.Errorf("listing the search hits of %d new papers: %w", len(ids), err)
		}
	}
	if len(stored) == 0 {
		return nil
	}
	type row struct {
		PaperID int64   `json:"paper_id"`
		Seqs    []int64 `json:"seqs"`
	}
	rows := make([]row, 0, len(stored))
	for id, seqs := range stored {
		rows = append(rows, row{id, seqs})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.PaperID, b.PaperID) })
	payload, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO paper_search_hits (paper_id, seqs)
		SELECT r.paper_id, ARRAY(SELECT jsonb_array_elements_text(r.seqs)::bigint)
		FROM jsonb_to_recordset($1::jsonb) AS r(paper_id bigint, seqs jsonb)
		ON CONFLICT (paper_id) DO UPDATE SET seqs = paper_search_hits.seqs || excluded.seqs`, payload)
	if err != nil {
		return fmt.Errorf("listing the search hits of %d stored papers: %w", len(rows), err)
	}
	return nil
}

// loadSearches sets the searches of the stored papers byID (ids): the keys
// of the search_hits rows their paper_search_hits rows list (a primary-key
// probe per paper, one per seq of search_hits_seq_idx).
func loadSearches(ctx context.Context, tx pgx.Tx, ids []int64, byID map[int64]*stored) error {
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT ps.paper_id, h.key
		FROM paper_search_hits ps CROSS JOIN LATERAL unnest(ps.seqs) AS s(seq)
		JOIN search_hits h ON h.seq = s.seq
		WHERE ps.paper_id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("loading the searches of %d papers: %w", len(ids), err)
	}
	var id int64
	var key string
	_, err = pgx.ForEachRow(rows, []any{&id, &key}, func() error {
		byID[id].searches[key] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading the searches of %d papers: %w", len(ids), err)
	}
	return nil
}

// removeHits takes withdrawn papers (ids) out of every search_hits row that
// lists them: like their key rows, their matches are gone, and should a
// paper come back its matches are new again. It deletes their
// paper_search_hits rows; the table's trigger (search_hits_forget, which
// also serves a paper's deletion) edits the search_hits rows those listed,
// deleting a row left without papers.
func removeHits(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM paper_search_hits WHERE paper_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("removing the search hits of %d deleted papers: %w", len(ids), err)
	}
	return nil
}

// SearchHits returns the papers (ids, ascending) that the search_hits rows
// of key (a "query:" key) list, every kind of match: what a search has
// matched so far.
func SearchHits(ctx context.Context, tx pgx.Tx, key string) ([]int64, error) {
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT u.id FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(id)
		WHERE h.key = $1 ORDER BY 1`, key)
	if err != nil {
		return nil, fmt.Errorf("reading the matches of %s: %w", key, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading the matches of %s: %w", key, err)
	}
	return ids, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
