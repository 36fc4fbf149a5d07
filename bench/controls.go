package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/inbox"
	"followfeed/match"
	"followfeed/notify"
)

// The reader's controls' cost on digests (issue 27): the digest users are
// given read state (and mutes) as readers who use them have, and their
// digests are measured in turn with the same users' digests without
// them. The generated dataset holds no read state and no mute: what
// PutControls gives the users, RemoveControls takes off again, at the end
// of each measurement and at the start of a run.

// The controls each measured reader gets.
const (
	// ControlRead is how many papers each reader has marked read or done
	// (alternately).
	ControlRead = 200
	// controlWindowEvery: of the papers a reader's window matches (its
	// newest candidates, newest first), every controlWindowEvery-th is
	// one of the marked ones; the rest are the newest papers their feed
	// matches outside the window, the papers a reader has read before.
	controlWindowEvery = 4
)

// windowCandidates is how many of a window's newest matches a digest
// selects (notify's candidates): the papers the window's marks are drawn
// from.
const windowCandidates = 250

// ControlPlan is what PutControls gives the measured readers.
type ControlPlan struct {
	// Marks are the readers' read and done papers.
	Marks []inbox.Mark
	// Users is how many readers were given controls, InWindow how many
	// of the marks are papers of the readers' windows.
	Users, InWindow int
}

// PlanControls chooses, for each of users, read papers among the
// papers their window (fromSeq, toSeq] and their feed match
// (match.Service.MatchedMany, untimed): every controlWindowEvery-th of
// the window's newest windowCandidates matches, then the newest papers
// the feed matches outside the window, ControlRead in all (fewer for a
// reader whose follows match fewer), marked read and done in turn.
func PlanControls(ctx context.Context, m *match.Service, users []int64, fromSeq, toSeq int64) (*ControlPlan, error) {
	qs := make([]match.Query, 0, 2*len(users))
	for _, u := range users {
		qs = append(qs,
			match.Query{UserID: u, AfterSeq: fromSeq - 1, UpToSeq: toSeq, Limit: windowCandidates, IDsOnly: true},
			match.Query{UserID: u, Limit: 2 * ControlRead, IDsOnly: true})
	}
	plan := &ControlPlan{}
	// In slices of users: a few hundred queries per snapshot.
	const chunk = 200
	for lo := 0; lo < len(qs); lo += 2 * chunk {
		rs, err := m.MatchedMany(ctx, qs[lo:min(lo+2*chunk, len(qs))])
		if err != nil {
			return nil, fmt.Errorf("choosing the readers' read papers: %w", err)
		}
		for j := 0; j < len(rs); j += 2 {
			u := qs[lo+j].UserID
			window, feed := rs[j].Papers, rs[j+1].Papers
			inWindow := map[int64]bool{}
			for _, p := range window {
				inWindow[p.ID] = true
			}
			var ids []int64
			for i := 0; i < len(window) && len(ids) < ControlRead; i += controlWindowEvery {
				ids = append(ids, window[i].ID)
			}
			plan.InWindow += len(ids)
			for _, p := range feed {
				if len(ids) == ControlRead {
					break
				}
				if !inWindow[p.ID] {
					ids = append(ids, p.ID)
				}
			}
			if len(ids) > 0 {
				plan.Users++
			}
			for i, id := range ids {
				st := inbox.Read
				if i%2 == 1 {
					st = inbox.Done
				}
				plan.Marks = append(plan.Marks, inbox.Mark{UserID: u, PaperID: id, State: st})
			}
		}
	}
	return plan, nil
}

// PutControls gives the readers plan's read states through the owners'
// lab loaders (inbox.PutStates), in one transaction, and analyzes the
// tables it wrote (the measurement's plans see them).
func PutControls(ctx context.Context, db *database.DB, plan *ControlPlan) error {
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := inbox.PutStates(ctx, tx, plan.Marks)
		return err
	}); err != nil {
		return err
	}
	_, err := db.Pool.Exec(ctx, `ANALYZE paper_states`)
	return err
}

// RemoveControls takes every read state off the dataset again
// (inbox.RemoveAllStates; the generated dataset has none of its own), in
// one transaction, then vacuums the tables (the measurements that follow
// meet no dead rows), and returns how many states it removed.
func RemoveControls(ctx context.Context, db *database.DB) (states int, err error) {
	ctx = context.WithoutCancel(ctx)
	if err := db.InTx(ctx, func(tx pgx.Tx) (err error) {
		states, err = inbox.RemoveAllStates(ctx, tx)
		return err
	}); err != nil {
		return 0, err
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE paper_states`); err != nil {
		return 0, err
	}
	return states, nil
}

// MeasureDigestsControlled is MeasureDigests with the readers' controls
// in place: plan's states (PutControls, untimed) for the run, removed
// again afterwards (RemoveControls), also when the run fails.
func MeasureDigestsControlled(ctx context.Context, db *database.DB, d *notify.Digester, plan *ControlPlan, users []int64, fromSeq, toSeq int64, workers, batch int) (run DigestRun, err error) {
	if err := PutControls(ctx, db, plan); err != nil {
		return DigestRun{}, fmt.Errorf("giving the readers their controls: %w", err)
	}
	defer func() {
		if _, rerr := RemoveControls(ctx, db); rerr != nil && err == nil {
			err = fmt.Errorf("removing the readers' controls: %w", rerr)
		}
	}()
	return MeasureDigests(ctx, db, d, users, fromSeq, toSeq, workers, batch)
}

// controlsFigure is the digests-with-controls figure: the median of
// controlled (sorted by rate) against plain's (sorted, the newest-first
// runs of the same users and windows), ≥ 90% of it to pass, and its
// paragraph.
func controlsFigure(plain, controlled []DigestRun, plan *ControlPlan, users int) (Figure, string) {
	med, cmed := plain[len(plain)/2], controlled[len(controlled)/2]
	share := cmed.Rate / max(med.Rate, 1)
	_, self, pg := cmed.PerDigest()
	f := Figure{Key: "digests-controls", Name: fmt.Sprintf("digests with %d read papers per reader (newest first)", ControlRead), Target: "≥ 90% of the rate without",
		Result: fmt.Sprintf("%.0f / s, %.0f%% of %.0f / s without (median of %d: %.0f–%.0f)", cmed.Rate, 100*share, med.Rate, len(controlled), controlled[0].Rate, controlled[len(controlled)-1].Rate),
		Value:  cmed.Rate, Pass: share >= 0.9}
	detail := fmt.Sprintf("Digests with the reader's controls: the same %d users and windows as the newest-first digests, measured in turn with them; before each run (untimed) %d of the users "+
		"get %d papers each marked read and done in turn (`inbox.PutStates`, %d states in all): every %s of the newest %d papers their window matches (%d states, the papers "+
		"a digest must leave out) and the rest the newest papers their feed matches outside the window (papers read before); after the run `inbox.RemoveAllStates` takes them off again. "+
		"The digests listed %.1f papers each (%.1f without). Per digest in the median run: followfeed + SMTP sink %s, this database's PostgreSQL backends %s.",
		users, plan.Users, ControlRead, len(plan.Marks), ordinal(controlWindowEvery), windowCandidates, plan.InWindow,
		cmed.PapersEach(), med.PapersEach(), msPrecise(self), msPrecise(pg))
	return f, detail
}

// ordinal is "fourth" for 4 (the small numbers the paragraphs use).
func ordinal(n int) string {
	if w := []string{"", "first", "second", "third", "fourth", "fifth"}; n < len(w) {
		return w[n]
	}
	return fmt.Sprintf("%dth", n)
}
