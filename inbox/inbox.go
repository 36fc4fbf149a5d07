// Package inbox owns users' read state (issue #27): what a user did
// with a paper they were told about, read or done, one row per user and
// paper in paper_states (migration 00033); a paper without a row is
// unread. It writes the table (Set, MarkAllRead, the erasure's EraseUser)
// and reads it for pages and the export (Of, All); package match reads it
// through inbox/inboxsql to leave a user's read and done papers out of
// every surface (match.Query.Unread, match/controls.go).
package inbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/text"
	"followfeed/match"
	"followfeed/ranking"
)

// State is what a user did with a paper.
type State string

// The states. Unread is the absence of a row.
const (
	Unread State = "unread"
	Read   State = "read"
	Done   State = "done"
)

// States lists the states in the order pages show them.
var States = []State{Unread, Read, Done}

// ParseState reads a state as the API and the pages write it: "unread",
// "read" or "done" (case and surrounding spaces ignored). Anything else is
// an *apperr.Error naming the field "state".
func ParseState(s string) (State, error) {
	switch v := State(strings.ToLower(strings.TrimSpace(s))); v {
	case Unread, Read, Done:
		return v, nil
	}
	return "", apperr.InvalidField("state", "%q is not one of unread, read, done", text.Truncate(s, 40))
}

// Label is what a page's button says for st.
func (st State) Label() string {
	switch st {
	case Read:
		return "Read"
	case Done:
		return "Done"
	}
	return "Unread"
}

// Service reads and writes users' paper states.
type Service struct {
	db      *database.DB
	matcher *match.Service
	ranking *ranking.Service // RankWith; nil: no best first, no feedback
}

// New returns the service over db; matcher selects the papers MarkAllRead
// marks.
func New(db *database.DB, matcher *match.Service) *Service {
	return &Service{db: db, matcher: matcher}
}

// Entry is one user's state of one paper.
type Entry struct {
	PaperID   int64
	ArxivID   string
	Title     string
	State     State
	ChangedAt time.Time // zero for Unread
}

// Set records st as user userID's state of the paper arxivID (any form
// paper.ParseArxivID reads), in one transaction: Unread deletes the row,
// Read and Done write it (its changed_at moves only when the state
// changes), and bumps the user's feed version (account.BumpFeeds: the
// feeds with ?unread=1 get a new ETag). Any stored paper may be marked, matched or not: a state says
// nothing about anyone else and only ever hides the paper. A paper that is
// not stored (or was withdrawn) is an apperr.NotFound; an id that is no
// arXiv id an apperr.Invalid naming "arxiv_id".
func (s *Service) Set(ctx context.Context, userID int64, arxivID string, st State) (Entry, error) {
	var e Entry
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		paperID, p, err := catalog.LivePaper(ctx, tx, arxivID)
		if err != nil {
			return err
		}
		e = Entry{ArxivID: p.ArxivID, State: st, PaperID: paperID, Title: p.Title}
		if e.ChangedAt, err = write(ctx, tx, userID, []int64{paperID}, st, true); err != nil {
			return err
		}
		// The feeds with ?unread=1 show the change: a new ETag.
		return account.BumpFeeds(ctx, tx, userID)
	})
	if err != nil && database.IsUserGone(err) {
		return Entry{}, apperr.New(apperr.NotFound, "no such user")
	}
	return e, err
}

// write sets st on user userID's papers ids in tx: Unread deletes the
// rows; Read and Done insert or (with overwrite) change them, leaving an
// unchanged row and its time alone; without overwrite an existing row
// (read or done) stays as it is. It returns the row's time when one paper
// is given.
func write(ctx context.Context, tx pgx.Tx, userID int64, ids []int64, st State, overwrite bool) (time.Time, error) {
	if st == Unread {
		if _, err := tx.Exec(ctx, `DELETE FROM paper_states WHERE user_id = $1 AND paper_id = ANY($2)`, userID, ids); err != nil {
			return time.Time{}, fmt.Errorf("marking %d papers of user %d unread: %w", len(ids), userID, err)
		}
		return time.Time{}, nil
	}
	conflict := `DO NOTHING`
	if overwrite {
		conflict = `DO UPDATE SET state = EXCLUDED.state, changed_at = now() WHERE s.state <> EXCLUDED.state`
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO paper_states AS s (user_id, paper_id, state)
		SELECT $1, p, $3 FROM unnest($2::bigint[]) p
		ON CONFLICT (user_id, paper_id) `+conflict, userID, ids, string(st)); err != nil {
		return time.Time{}, fmt.Errorf("marking %d papers of user %d %s: %w", len(ids), userID, st, err)
	}
	if len(ids) != 1 {
		return time.Time{}, nil
	}
	var at time.Time
	if err := tx.QueryRow(ctx, `SELECT changed_at FROM paper_states WHERE user_id = $1 AND paper_id = $2`, userID, ids[0]).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("reading the state of user %d's paper: %w", userID, err)
	}
	return at.UTC(), nil
}

// MaxMarkAll is the most papers one MarkAllRead marks: the newest unread
// ones (a user with more marks all read again).
const MaxMarkAll = 2000

// MarkAllRead marks read user userID's unread matched papers (those
// match.Query{Unread: true} selects), of the follow only (nil: all
// follows), matched up to seq upToSeq (0: up to now; the inbox page passes
// the newest seq it showed, so that a paper matched since is not marked
// unseen), at most MaxMarkAll of them, the newest. Papers marked done stay
// done. It returns how many it marked. A follow the user does not have
// selects nothing.
func (s *Service) MarkAllRead(ctx context.Context, userID int64, only *follow.Target, upToSeq int64) (int, error) {
	res, err := s.matcher.Matched(ctx, match.Query{UserID: userID, Only: only, UpToSeq: upToSeq, Limit: MaxMarkAll, IDsOnly: true, Unread: true})
	if err != nil {
		return 0, err
	}
	if len(res.Papers) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(res.Papers))
	for i, p := range res.Papers {
		ids[i] = p.ID
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := write(ctx, tx, userID, ids, Read, false); err != nil {
			return err
		}
		return account.BumpFeeds(ctx, tx, userID)
	})
	if err != nil && database.IsUserGone(err) {
		return 0, apperr.New(apperr.NotFound, "no such user")
	}
	return len(ids), err
}

// Of returns user userID's states of the papers ids (papers.id); unread
// papers are absent.
func (s *Service) Of(ctx context.Context, userID int64, ids []int64) (map[int64]State, error) {
	if len(ids) == 0 {
		return map[int64]State{}, nil
	}
	return database.TextByID[State](ctx, s.db, fmt.Sprintf("the paper states of user %d", userID),
		`SELECT paper_id, state FROM paper_states WHERE user_id = $1 AND paper_id = ANY($2)`, userID, ids)
}

// All returns every paper user userID marked read or done, most recently
// changed first, with the papers' arXiv ids and titles (the export).
func (s *Service) All(ctx context.Context, userID int64) ([]Entry, error) {
	var out []Entry
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT paper_id, state, changed_at FROM paper_states
			WHERE user_id = $1 ORDER BY changed_at DESC, paper_id DESC`, userID)
		if err != nil {
			return fmt.Errorf("listing the paper states of user %d: %w", userID, err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
			var e Entry
			var st string
			err := r.Scan(&e.PaperID, &st, &e.ChangedAt)
			e.State, e.ChangedAt = State(st), e.ChangedAt.UTC()
			return e, err
		})
		if err != nil {
			return fmt.Errorf("listing the paper states of user %d: %w", userID, err)
		}
		ids := make([]int64, len(out))
		for i, e := range out {
			ids[i] = e.PaperID
		}
		papers, err := catalog.Load(ctx, tx, ids, catalog.WithoutAbstract)
		if err != nil {
			return err
		}
		for i := range out {
			p := papers[out[i].PaperID]
			out[i].ArxivID, out[i].Title = p.ArxivID, p.Title
		}
		return nil
	})
	return out, err
}

// EraseUser erases user userID's paper states and inbox settings in tx
// (the erasure's transaction, account.Users.Erase, whose hook it is).
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `
		WITH st AS (DELETE FROM paper_states WHERE user_id = $1)
		DELETE FROM inbox_settings WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("erasing the paper states of user %d: %w", userID, err)
	}
	return nil
}
