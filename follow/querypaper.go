package follow

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/internal/arxivid"
	"followfeed/search"
)

// Follows of a query or a single paper rather than of people and places: queries
// (kind query) and single papers (kind paper).

const paperForms = "arXiv ids look like 2202.02326 or astro-ph/9901001 (a version such as v2, an arXiv: prefix and arxiv.org/abs/ links are fine)"

// taxonomyCategories resolves cat: filters with the compiled-in taxonomy.
type taxonomyCategories struct{}

// ResolveCategory implements search.Categories: an active category or
// archive (aliases canonical) and the match key papers carry for it.
func (taxonomyCategories) ResolveCategory(v string) (string, string, error) {
	id, err := parseCategoryID(v)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return "", "", errors.New(ae.Message)
		}
		return "", "", err
	}
	t := Target{Kind: Category, ID: id}
	return id, t.Key(), nil
}

// CompileQuery parses a query with this package's taxonomy for its
// cat: filters. Errors are *search.Error (position and expectation).
func CompileQuery(s string) (*search.Query, error) {
	return search.Parse(s, taxonomyCategories{})
}

// NormalizeQuery returns the normal form of a query, the ID of its
// Target. Errors are *apperr.Error with Code Invalid, Field "id", a message
// with the position and what was expected, and Details[0].Index the
// 1-based character position.
func NormalizeQuery(s string) (string, error) {
	q, err := CompileQuery(s)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return "", se.AppError("id")
		}
		return "", err
	}
	return q.String(), nil
}

// ParsePaperID normalises an arXiv id as ParseTarget does for kind paper,
// reading it as package paper reads stored ids (arxivid.Parse): new-style
// "2202.02326" or old-style "astro-ph/9901001", with or without a version
// ("v2", dropped), an "arXiv:" prefix or an arxiv.org/abs/ or /pdf/ link;
// an id arXiv cannot have (month 13, "9999.99999") is refused. The paper
// need not be known yet. Errors are as for ParseTarget, with Field "id".
func ParsePaperID(s string) (string, error) {
	id, _, err := arxivid.Parse(s)
	if err != nil {
		return "", apperr.InvalidField("id", "%s; %s", err.Error(), paperForms)
	}
	return id, nil
}

// queryOrPaperName is DisplayName for the kinds of this file.
func queryOrPaperName(t Target) (string, bool) {
	switch t.Kind {
	case Query:
		return "Query: " + t.ID, true
	case Paper:
		return "arXiv:" + t.ID, true
	}
	return "", false
}

// ActiveQueries returns the normal forms of every query somebody
// follows, inside tx: package catalog evaluates new papers against them at
// ingest. It reads follow_counts' primary key over the query: range.
func ActiveQueries(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT substr(key, 7) FROM follow_counts
		WHERE key >= 'query:' AND key < 'query;' AND followers > 0`)
	if err != nil {
		return nil, fmt.Errorf("listing queries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing queries: %w", err)
	}
	return out, nil
}

// HoldFollowers returns, inside tx, the users who follow t, after waiting
// for every follow and unfollow of t in progress to commit, and keeps new
// ones waiting until tx ends (a share lock on t's follow_counts row, which
// Follow and Unfollow update). The backfill of a query calls it
// last, after its scan: a follow whose backfill job was not inserted because
// this one was already queued or running has then committed, so the
// backfill bumps its feed and a later ingest sees the search; a follow that
// comes after waits only for the backfill's commit, then inserts a job of
// its own. One probe of follow_counts' primary key and an index-only scan of
// follows_key_idx.
func HoldFollowers(ctx context.Context, tx pgx.Tx, t Target) ([]int64, error) {
	var n int64
	err := tx.QueryRow(ctx, `SELECT followers FROM follow_counts WHERE key = $1 FOR SHARE`, t.Key()).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && n <= 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for the follows of %s: %w", t, err)
	}
	rows, err := tx.Query(ctx, `SELECT user_id FROM follows WHERE key = $1 ORDER BY user_id`, t.Key())
	if err != nil {
		return nil, fmt.Errorf("listing the followers of %s: %w", t, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("listing the followers of %s: %w", t, err)
	}
	return ids, nil
}

// FollowedPapers returns, inside tx, which of arxivIDs (normalised ids)
// somebody follows as kind paper: package catalog writes those papers' events
// at ingest. One probe of follow_counts' primary key per id.
func FollowedPapers(ctx context.Context, tx pgx.Tx, arxivIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(arxivIDs) == 0 {
		return out, nil
	}
	keys := make([]string, len(arxivIDs))
	for i, id := range arxivIDs {
		keys[i] = Target{Kind: Paper, ID: id}.Key()
	}
	rows, err := tx.Query(ctx, `
		SELECT substr(key, 7) FROM follow_counts WHERE key = ANY($1) AND followers > 0`, keys)
	if err != nil {
		return nil, fmt.Errorf("finding followed papers: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finding followed papers: %w", err)
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
