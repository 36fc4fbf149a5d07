package ranking

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/internal/text"
)

// Value is what a user says of a paper.
type Value string

// The values of feedback; None clears it.
const (
	More  Value = "more"  // "more like this"
	Less  Value = "less"  // "less like this"
	Saved Value = "saved" // kept for later: a positive example too
	None  Value = ""
)

// Values lists the values a user may give, in the order pages show them.
var Values = []Value{More, Less, Saved}

// ParseValue reads a value as the API and the links write it: "more",
// "less" or "saved" ("save" too, the links' verb). Anything else is an
// *apperr.Error naming the field "value".
func ParseValue(s string) (Value, error) {
	switch v := Value(strings.ToLower(strings.TrimSpace(s))); v {
	case More, Less, Saved:
		return v, nil
	case "save":
		return Saved, nil
	}
	return None, apperr.InvalidField("value", "%q is not one of more, less, saved (or null to clear the feedback)", text.Truncate(s, 40))
}

// Label is what a page's button says for v.
func (v Value) Label() string {
	switch v {
	case More:
		return "More like this"
	case Less:
		return "Less like this"
	case Saved:
		return "Save"
	}
	return "No feedback"
}

// Feedback is one user's word on one paper.
type Feedback struct {
	ArxivID   string
	Title     string
	AbsURL    string
	Value     Value
	UpdatedAt time.Time
}

// Set records v as user userID's feedback on the paper arxivID (any form
// paper.ParseArxivID reads; None clears it), counts a change of what the
// user's model learns from and queues its retraining, in one transaction.
// A paper that is not stored (or was withdrawn) is an apperr.NotFound; an
// id that is no arXiv id an apperr.Invalid naming "arxiv_id". Setting the
// value a paper already has changes nothing and queues nothing. The
// returned Feedback has the paper's title; its Value is None when cleared.
func (s *Service) Set(ctx context.Context, userID int64, arxivID string, v Value) (Feedback, error) {
	var fb Feedback
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		paperID, p, err := catalog.LivePaper(ctx, tx, arxivID)
		if err != nil {
			return err
		}
		fb = Feedback{ArxivID: p.ArxivID, Value: v, Title: p.Title, AbsURL: p.AbsURL}
		changed, at, err := writeFeedback(ctx, tx, userID, paperID, v)
		if err != nil || !changed {
			fb.UpdatedAt = at
			return err
		}
		fb.UpdatedAt = at
		return s.changed(ctx, tx, userID, true)
	})
	return fb, err
}

// writeFeedback sets (or with None deletes) one row and reports whether it
// changed, with the row's time.
func writeFeedback(ctx context.Context, tx pgx.Tx, userID, paperID int64, v Value) (bool, time.Time, error) {
	if v == None {
		tag, err := tx.Exec(ctx, `DELETE FROM feedback WHERE user_id = $1 AND paper_id = $2`, userID, paperID)
		if err != nil {
			return false, time.Time{}, fmt.Errorf("clearing feedback of user %d: %w", userID, err)
		}
		return tag.RowsAffected() > 0, time.Time{}, nil
	}
	// The WHERE of DO UPDATE leaves an unchanged value's row (and its
	// time) alone: RETURNING gives nothing, and nothing is retrained.
	var at time.Time
	err := tx.QueryRow(ctx, `
		INSERT INTO feedback AS f (user_id, paper_id, value) VALUES ($1, $2, $3)
		ON CONFLICT (user_id, paper_id) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
			WHERE f.value <> EXCLUDED.value
		RETURNING updated_at`, userID, paperID, string(v)).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT updated_at FROM feedback WHERE user_id = $1 AND paper_id = $2`, userID, paperID).Scan(&at)
		return false, at.UTC(), err
	}
	if err != nil {
		return false, time.Time{}, fmt.Errorf("recording feedback of user %d: %w", userID, err)
	}
	return true, at.UTC(), nil
}

// FeedbackPage is one page of a user's feedback, newest first.
type FeedbackPage struct {
	Items []Feedback
	// Next is the cursor of the following page, "" on the last.
	Next string
}

// MaxPage is the most feedback one page lists.
const MaxPage = 200

// List returns user userID's feedback, newest first, limit a page (1 to
// MaxPage; 0 means 50), from cursor (a Next of an earlier page, or "").
// A cursor List did not make is an apperr.Invalid naming "cursor".
func (s *Service) List(ctx context.Context, userID int64, cursor string, limit int) (FeedbackPage, error) {
	switch {
	case limit == 0:
		limit = 50
	case limit < 1 || limit > MaxPage:
		return FeedbackPage{}, apperr.InvalidField("limit", "must be from 1 to %d", MaxPage)
	}
	after, afterID, err := parseCursor(cursor)
	if err != nil {
		return FeedbackPage{}, err
	}
	var page FeedbackPage
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		// feedback_user_updated_idx, from the cursor on: limit+1 rows say
		// whether there is a next page.
		rows, err := tx.Query(ctx, `
			SELECT paper_id, value, updated_at FROM feedback
			WHERE user_id = $1 AND ($2::timestamptz IS NULL OR (updated_at, paper_id) < ($2, $3))
			ORDER BY updated_at DESC, paper_id DESC LIMIT $4`, userID, after, afterID, limit+1)
		if err != nil {
			return fmt.Errorf("listing feedback of user %d: %w", userID, err)
		}
		type row struct {
			id int64
			v  string
			at time.Time
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.v, &x.at)
		})
		if err != nil {
			return fmt.Errorf("listing feedback of user %d: %w", userID, err)
		}
		if len(got) > limit {
			last := got[limit-1]
			page.Next = makeCursor(last.at, last.id)
			got = got[:limit]
		}
		ids := make([]int64, len(got))
		for i, x := range got {
			ids[i] = x.id
		}
		papers, err := catalog.Load(ctx, tx, ids, catalog.WithoutAbstract)
		if err != nil {
			return err
		}
		for _, x := range got {
			p := papers[x.id]
			page.Items = append(page.Items, Feedback{ArxivID: p.ArxivID, Title: p.Title, AbsURL: p.AbsURL, Value: Value(x.v), UpdatedAt: x.at.UTC()})
		}
		return nil
	})
	return page, err
}

// Of returns user userID's feedback on the papers ids (papers.id), for
// pages and mails that show it; papers without feedback are absent.
func (s *Service) Of(ctx context.Context, userID int64, ids []int64) (map[int64]Value, error) {
	if len(ids) == 0 {
		return map[int64]Value{}, nil
	}
	return database.TextByID[Value](ctx, s.db, fmt.Sprintf("the feedback of user %d", userID),
		`SELECT paper_id, value FROM feedback WHERE user_id = $1 AND paper_id = ANY($2)`, userID, ids)
}

// Get returns user userID's feedback on the paper arxivID (Value None
// when there is none), with its title; a paper not stored is an
// apperr.NotFound.
func (s *Service) Get(ctx context.Context, userID int64, arxivID string) (Feedback, error) {
	fb := Feedback{ArxivID: arxivID}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		paperID, err := catalog.LiveID(ctx, tx, arxivID)
		if err != nil {
			return err
		}
		if paperID == 0 {
			return apperr.New(apperr.NotFound, "no paper arXiv:%s is stored here", arxivID)
		}
		papers, err := catalog.Load(ctx, tx, []int64{paperID}, catalog.WithoutAbstract)
		if err != nil {
			return err
		}
		fb.Title, fb.AbsURL = papers[paperID].Title, papers[paperID].AbsURL
		var v string
		err = tx.QueryRow(ctx, `SELECT value, updated_at FROM feedback WHERE user_id = $1 AND paper_id = $2`, userID, paperID).Scan(&v, &fb.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		fb.Value, fb.UpdatedAt = Value(v), fb.UpdatedAt.UTC()
		return err
	})
	return fb, err
}

// A cursor is the last row's (updated_at, paper_id), base64url.
func makeCursor(at time.Time, id int64) string {
	b := binary.AppendVarint(nil, at.UnixMicro())
	b = binary.AppendVarint(b, id)
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor reads a cursor makeCursor made ("" is the first page); any
// other text is an apperr.Invalid naming "cursor".
func parseCursor(c string) (*time.Time, int64, error) {
	if c == "" {
		return nil, 0, nil
	}
	bad := apperr.InvalidField("cursor", "not a cursor of this list: pass the next value of the previous page")
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, 0, bad
	}
	us, n := binary.Varint(b)
	if n <= 0 {
		return nil, 0, bad
	}
	id, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return nil, 0, bad
	}
	// A row's time and paper id, or not a cursor of this list: most
	// other text decodes to two numbers too, and a time beyond
	// PostgreSQL's range failed the statement (a 500).
	at := time.UnixMicro(us).UTC()
	if id < 1 || at.Before(oldestCursor) || at.After(time.Now().Add(24*time.Hour)) {
		return nil, 0, bad
	}
	return &at, id, nil
}

// oldestCursor is before any feedback row's time.
var oldestCursor = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
