package match

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/paper"
)

// Event is one event of a followed paper (see catalog/events.go): Kind is
// paper.EventVersion, EventPublished, EventWithdrawn or EventCites, Paper
// the follow it reached the user through.
type Event struct {
	Paper   follow.Target
	Kind    string
	Detail  string
	Version int
	Seq     int64
}

// fillEvents reads the events of the papers that matched a paper follow,
// for every query that has such a match: one probe of paper_keys' primary
// key (paper_id, key, ...) per paper and followed paper, so users
// without paper follows pay nothing.
func fillEvents(ctx context.Context, tx pgx.Tx, qs []Query, results []Result) error {
	for qi := range results {
		var ids []int64
		var keys []string
		for _, p := range results[qi].Papers {
			for _, r := range p.Reasons {
				if r.Kind == follow.Paper {
					ids = append(ids, p.ID)
					keys = append(keys, r.Key())
				}
			}
		}
		if len(ids) == 0 {
			continue
		}
		upTo := qs[qi].window()[1]
		rows, err := tx.Query(ctx, catalog.EventsSQL, ids, keys, qs[qi].AfterSeq, upTo)
		if err != nil {
			return fmt.Errorf("loading paper events: %w", err)
		}
		byPaper := map[int64][]Event{}
		var (
			id                int64
			key, kind, detail string
			version           int
			seq               int64
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &key, &version, &kind, &detail, &seq}, func() error {
			t, err := follow.TargetFromKey(key)
			if err != nil {
				return nil
			}
			for _, e := range byPaper[id] {
				if e.Paper == t && e.Kind == kind {
					return nil // an older event of the same kind
				}
			}
			byPaper[id] = append(byPaper[id], Event{Paper: t, Kind: kind, Detail: detail, Version: version, Seq: seq})
			return nil
		})
		if err != nil {
			return fmt.Errorf("loading paper events: %w", err)
		}
		for i := range results[qi].Papers {
			p := &results[qi].Papers[i]
			p.Events = byPaper[p.ID]
		}
	}
	return nil
}

// EventID is what distinguishes the paper's newest event in a feed item's
// id ("v3", "published", "withdrawn", "cites:2202.02326"), "" when the
// paper has no events: each event is then its own item, shown once by a
// feed reader, while the paper itself keeps its plain id.
func (p *Paper) EventID() string {
	if len(p.Events) == 0 {
		return ""
	}
	e := p.Events[0]
	switch e.Kind {
	case paper.EventVersion:
		return fmt.Sprintf("v%d", e.Version)
	case paper.EventCites:
		return "cites:" + e.Paper.ID
	}
	return e.Kind
}

// ReasonName is how reason t of the paper is named to its user (label
// is the user's own name for the follow, may be ""): for a paper follow
// with events, what happened ("New version v3 of …; comments: …",
// "Published in …", "Withdrawn: …", "Cites: …"); otherwise
// t.ReasonName(label, p.AuthorName).
func (p *Paper) ReasonName(t follow.Target, label string) string {
	var parts []string
	for _, e := range p.Events {
		if e.Paper == t {
			parts = append(parts, e.text(p.Title))
		}
	}
	if len(parts) == 0 {
		return t.ReasonName(label, p.AuthorName)
	}
	s := strings.Join(parts, "; ")
	if label != "" {
		s = label + ": " + s
	}
	return s
}

// text words the event; title is the paper it is on.
func (e Event) text(title string) string {
	switch e.Kind {
	case paper.EventVersion:
		s := fmt.Sprintf("New version v%d of %s", e.Version, title)
		if e.Detail != "" {
			s += " (comments: " + e.Detail + ")"
		}
		return s
	case paper.EventPublished:
		if doi, ok := strings.CutPrefix(e.Detail, "doi:"); ok {
			return "Published: https://doi.org/" + doi
		}
		return "Published in " + e.Detail
	case paper.EventWithdrawn:
		return "Withdrawn: " + title
	case paper.EventCites:
		return "Cites: " + e.Detail
	}
	return e.Kind
}
