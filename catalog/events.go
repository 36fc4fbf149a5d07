package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/internal/text"
	"followfeed/paper"
)

// Events of followed papers (kind paper) are key rows too: the key is the
// follow's, "paper:<arXiv id>", and the row's event (paper.EventVersion,
// …) says what happened. Store writes them in the transaction that learns
// of the event, only for papers somebody follows (follow.FollowedPapers),
// so feeds, digests, channels, counts and ETags treat them like any other
// match. They are replacement rows (a paper follow always includes
// replacements), so a user who already saw the paper is still told.
//
// The row's paper is the feed item: the followed paper itself for its own
// events, the citing paper for paper.EventCites.

// maxEventDetail caps what an event row carries (arXiv comments can be
// long; a reason line should not be).
const maxEventDetail = 300

// paperEvents returns the event rows of one followed paper's record: old is
// what was stored, merged what is stored now (same paper id). A record that
// changes nothing gives none.
func paperEvents(id int64, old, merged paper.Paper) []keyRow {
	key := follow.Target{Kind: follow.Paper, ID: old.ArxivID}.Key()
	var out []keyRow
	if merged.Version > old.Version {
		detail := ""
		if merged.Comments != old.Comments {
			detail = text.Truncate(merged.Comments, maxEventDetail)
		}
		out = append(out, keyRow{PaperID: id, Key: key, Version: merged.Version, Replacement: true, Event: paper.EventVersion, Detail: detail})
	}
	// Published once: the first DOI or journal reference (the other one
	// arriving later is no news).
	if old.JournalRef == "" && old.DOI == "" && (merged.JournalRef != "" || merged.DOI != "") {
		detail := merged.JournalRef
		if detail == "" {
			detail = "doi:" + merged.DOI
		}
		out = append(out, keyRow{PaperID: id, Key: key, Version: merged.Version, Replacement: true, Event: paper.EventPublished,
			Detail: text.Truncate(detail, maxEventDetail)})
	}
	return out
}

// withdrawnEvent is the event row of a followed paper's withdrawal, written
// after its other key rows are removed.
func withdrawnEvent(id int64, old paper.Paper) keyRow {
	return keyRow{PaperID: id, Key: follow.Target{Kind: follow.Paper, ID: old.ArxivID}.Key(), Version: max(old.Version, 1),
		Replacement: true, Event: paper.EventWithdrawn}
}

// citedPaper is a followed paper with a known OpenAlex work.
type citedPaper struct {
	arxivID, title string
}

// citeEvents returns the EventCites rows of the batch's papers whose
// References include a followed paper's OpenAlex work (ids maps arXiv ids
// to papers.id). A paper citing itself is no event.
func citeEvents(ctx context.Context, tx pgx.Tx, batch []paper.Paper, ids map[string]int64) ([]keyRow, error) {
	var works []string
	for _, p := range batch {
		works = append(works, p.References...)
	}
	if len(works) == 0 {
		return nil, nil
	}
	// papers_openalex_idx: one probe per referenced work (a few dozen per
	// paper); the followed ones are kept.
	rows, err := tx.Query(ctx, `
		SELECT p.openalex_id, p.arxiv_id, p.title FROM papers p
		WHERE p.openalex_id = ANY($1) AND p.deleted_at IS NULL`, works)
	if err != nil {
		return nil, fmt.Errorf("resolving referenced works: %w", err)
	}
	known := map[string]citedPaper{}
	var arxivIDs []string
	for rows.Next() {
		var w string
		var c citedPaper
		if err := rows.Scan(&w, &c.arxivID, &c.title); err != nil {
			rows.Close()
			return nil, fmt.Errorf("resolving referenced works: %w", err)
		}
		known[w] = c
		arxivIDs = append(arxivIDs, c.arxivID)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resolving referenced works: %w", err)
	}
	if len(known) == 0 {
		return nil, nil
	}
	followed, err := follow.FollowedPapers(ctx, tx, arxivIDs)
	if err != nil || len(followed) == 0 {
		return nil, err
	}
	var out []keyRow
	for _, p := range batch {
		id, ok := ids[p.ArxivID]
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, w := range p.References {
			c, ok := known[w]
			if !ok || !followed[c.arxivID] || c.arxivID == p.ArxivID || seen[c.arxivID] {
				continue
			}
			seen[c.arxivID] = true
			out = append(out, keyRow{PaperID: id, Key: follow.Target{Kind: follow.Paper, ID: c.arxivID}.Key(),
				Version: max(p.Version, 1), Replacement: true, Event: paper.EventCites, Detail: text.Truncate(c.title, maxEventDetail)})
		}
	}
	return out, nil
}

// isEventKey reports whether a key row's key is a paper follow's, whose
// rows are written only as events.
func isEventKey(key string) bool { return strings.HasPrefix(key, "paper:") }

// scheduleWorkLookup makes the stored paper arxivID due for enrichment at
// now when its OpenAlex work is not known yet and no lookup is pending, so
// that a citation of it can be resolved (the enricher looks papers up by
// their arXiv DOI, 10.48550/arXiv.<id>). A paper not stored yet is
// enriched when it is harvested. It runs in the follow's transaction; it
// touches one row and takes no writers' lock.
func scheduleWorkLookup(ctx context.Context, tx pgx.Tx, arxivID string, now time.Time) error {
	_, err := tx.Exec(ctx, `
		UPDATE papers SET enrich_after = $2, enrich_attempts = 0
		WHERE arxiv_id = $1 AND openalex_id IS NULL AND enrich_after IS NULL AND deleted_at IS NULL`, arxivID, now)
	if err != nil {
		return fmt.Errorf("scheduling the OpenAlex lookup of %s: %w", arxivID, err)
	}
	return nil
}
