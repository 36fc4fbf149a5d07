package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"followfeed/database"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/notify"
)

// The user's controls' cost on digests (issue 27): the digest users are
// given read state and mutes as users who use them have, and their
// digests are measured in turn with the same users' digests without
// them. The generated dataset holds no read state and no mute: what
// PutControls gives the users, RemoveControls takes off again, at the end
// of each measurement and at the start of a run.

// The controls each measured user gets.
const (
	// ControlRead is how many papers each user has marked read or done
	// (alternately).
	ControlRead = 200
	// ControlMutes is how many mutes each user has, a mix a user
	// makes: muteResearchers persons inside their category follows,
	// muteQueries words and phrases, and muteCrossLists categories'
	// cross-lists.
	ControlMutes    = muteResearchers + muteQueries + muteCrossLists
	muteResearchers = 4
	muteQueries     = 4
	muteCrossLists  = 2
	// controlWindowEvery: of the papers a user's window matches (its
	// newest candidates, newest first), every controlWindowEvery-th is
	// one of the marked ones; the rest are the newest papers their feed
	// matches outside the window, the papers a user has read before.
	controlWindowEvery = 4
)

// windowCandidates is how many of a window's newest matches a digest
// selects (notify's candidates): the papers the window's marks are drawn
// from.
const windowCandidates = 250

// ControlPlan is what PutControls gives the measured users.
type ControlPlan struct {
	// Marks are the users' read and done papers.
	Marks []inbox.Mark
	// Mutes are the users' mutes; Kinds counts them by kind.
	Mutes []mute.Bulk
	Kinds map[mute.Kind]int
	// Users is how many users were given controls, InWindow how many
	// of the marks are papers of the users' windows.
	Users, InWindow int
}

// PlanControls chooses, for each of users, read papers and mutes among
// the papers their window (fromSeq, toSeq] and their feed match
// (match.Service.MatchedMany, untimed). Read: every controlWindowEvery-th
// of the window's newest windowCandidates matches, then the newest papers
// the feed matches outside the window, ControlRead in all (fewer for a
// user whose follows match fewer), marked read and done in turn. Mutes
// (planMutes): drawn from the newest papers of the window, so that each
// hides papers a digest would list.
func PlanControls(ctx context.Context, m *match.Service, users []int64, fromSeq, toSeq int64) (*ControlPlan, error) {
	const per = 3 // queries per user
	qs := make([]match.Query, 0, per*len(users))
	for _, u := range users {
		qs = append(qs,
			match.Query{UserID: u, AfterSeq: fromSeq - 1, UpToSeq: toSeq, Limit: windowCandidates, IDsOnly: true},
			match.Query{UserID: u, Limit: 2 * ControlRead, IDsOnly: true},
			match.Query{UserID: u, AfterSeq: fromSeq - 1, UpToSeq: toSeq, Limit: muteSource})
	}
	plan := &ControlPlan{Kinds: map[mute.Kind]int{}}
	// In slices of users: a few hundred queries per snapshot.
	const chunk = 200
	for lo := 0; lo < len(qs); lo += per * chunk {
		rs, err := m.MatchedMany(ctx, qs[lo:min(lo+per*chunk, len(qs))])
		if err != nil {
			return nil, fmt.Errorf("choosing the users' read papers and mutes: %w", err)
		}
		for j := 0; j < len(rs); j += per {
			u := qs[lo+j].UserID
			window, feed := rs[j].Papers, rs[j+1].Papers
			mutes := planMutes(rs[j+2].Papers)
			for _, sp := range mutes {
				plan.Mutes = append(plan.Mutes, mute.Bulk{UserID: u, Spec: sp})
				plan.Kinds[mute.Mute{What: sp.What}.Kind()]++
			}
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
			if len(ids) > 0 || len(mutes) > 0 {
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

// muteSource is how many of the window's newest matches (with their
// details) a user's mutes are drawn from.
const muteSource = 40

// planMutes chooses a user's mutes from papers (their window's newest
// matches, with details and reasons), up to each kind's quota:
// muteResearchers authors of papers matched through a category or
// archive follow, each muted within that follow ("not from this author
// in cs.LG": the paper leaves unless another follow matches it);
// muteQueries searches for every follow, words and phrases of the
// papers' titles in turn (a title word `ti:word`, then two adjacent title
// words as a phrase, anywhere); muteCrossLists cross-lists of the
// categories the user follows, for every follow (then of the papers'
// other categories, for a user with fewer category follows). Each
// goes through mute.Parse, as the API's mutes do.
func planMutes(papers []match.Paper) []mute.Spec {
	var out []mute.Spec
	seen := map[string]bool{}
	add := func(in mute.Input) bool {
		sp, err := mute.Parse(in)
		if err != nil {
			return false
		}
		k := sp.What.Key()
		if sp.Scope != nil {
			k += " " + sp.Scope.Key()
		}
		if seen[k] {
			return false
		}
		seen[k] = true
		out = append(out, sp)
		return true
	}
	isCategory := func(t follow.Target) bool { return t.Kind == follow.Category }
	n := 0
	for _, p := range papers {
		for _, r := range p.Reasons {
			if n == muteResearchers || !isCategory(r) || len(p.Authors) == 0 || len(p.Authors[0].IDs) == 0 {
				continue
			}
			// The paper's last author: its first is often the person a
			// researcher follow of the user names.
			a := p.Authors[len(p.Authors)-1]
			if len(a.IDs) > 0 && add(mute.Input{Researcher: &a.IDs[0], HasFollow: true, FollowKind: string(r.Kind), FollowID: r.ID}) {
				n++
			}
			break
		}
	}
	n = 0
	for i, p := range papers {
		if n == muteQueries {
			break
		}
		words := titleWords(p.Title)
		if len(words) < 2 {
			continue
		}
		q := "ti:" + longest(words)
		if i%2 == 1 {
			k := (len(words) - 1) / 2
			q = `"` + words[k] + " " + words[k+1] + `"`
		}
		if add(mute.Input{Query: &q}) {
			n++
		}
	}
	n = 0
	no := false
	for _, p := range papers {
		for _, r := range p.Reasons {
			if n < muteCrossLists && isCategory(r) && add(mute.Input{Category: &r.ID, CrossLists: &no}) {
				n++
			}
		}
	}
	for _, p := range papers {
		for _, c := range p.Categories[min(1, len(p.Categories)):] {
			if n < muteCrossLists && add(mute.Input{Category: &c, CrossLists: &no}) {
				n++
			}
		}
	}
	return out
}

// titleWords are the words of a title of letters only, lower case.
func titleWords(title string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(title), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) > 2 {
			out = append(out, w)
		}
	}
	return out
}

// longest is the longest of words (the first of equals).
func longest(words []string) string {
	best := words[0]
	for _, w := range words[1:] {
		if len(w) > len(best) {
			best = w
		}
	}
	return best
}

// PutControls gives the users plan's read states and mutes through the
// owners' lab loaders (inbox.PutStates, mute.PutMany), in one
// transaction, and settles the tables it wrote (settle: vacuumed and
// analyzed, a checkpoint taken).
func PutControls(ctx context.Context, db *database.DB, plan *ControlPlan) error {
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := inbox.PutStates(ctx, tx, plan.Marks); err != nil {
			return err
		}
		_, err := mute.PutMany(ctx, tx, plan.Mutes)
		return err
	}); err != nil {
		return err
	}
	return settle(ctx, db)
}

// settle vacuums and analyzes the controls' tables and takes a
// checkpoint, untimed, so that a run meets them as a service meets them
// day to day, long after their rows were written: every row's commit
// known (hint bits set), the visibility map set (paper_states' index-only
// scans), the statistics current, and the bulk write's pages on disk,
// rather than paying for a year of users' clicks written a second
// before. The checkpoint needs a superuser (or pg_checkpoint): without
// it, only the vacuum.
func settle(ctx context.Context, db *database.DB) error {
	if _, err := db.Pool.Exec(ctx, `VACUUM (ANALYZE) paper_states, mutes`); err != nil {
		return err
	}
	if _, err := db.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" { // insufficient_privilege
			return err
		}
	}
	return nil
}

// RemoveControls takes every read state and mute off the dataset again
// (inbox.RemoveAllStates, mute.RemoveAll; the generated dataset has none
// of its own), in one transaction, then settles the tables (settle: the
// measurements that follow meet no dead rows), and returns how many of
// each it removed.
func RemoveControls(ctx context.Context, db *database.DB) (states, mutes int, err error) {
	ctx = context.WithoutCancel(ctx)
	if err := db.InTx(ctx, func(tx pgx.Tx) (err error) {
		if states, err = inbox.RemoveAllStates(ctx, tx); err != nil {
			return err
		}
		mutes, err = mute.RemoveAll(ctx, tx)
		return err
	}); err != nil {
		return 0, 0, err
	}
	if err := settle(ctx, db); err != nil {
		return 0, 0, err
	}
	return states, mutes, nil
}

// MeasureDigestsControlled is MeasureDigests with the users' controls
// in place: plan's states and mutes (PutControls, untimed) for the run, removed
// again afterwards (RemoveControls), also when the run fails.
func MeasureDigestsControlled(ctx context.Context, db *database.DB, d *notify.Digester, plan *ControlPlan, users []int64, fromSeq, toSeq int64, workers, batch int) (run DigestRun, err error) {
	if err := PutControls(ctx, db, plan); err != nil {
		return DigestRun{}, fmt.Errorf("giving the users their controls: %w", err)
	}
	defer func() {
		if _, _, rerr := RemoveControls(ctx, db); rerr != nil && err == nil {
			err = fmt.Errorf("removing the users' controls: %w", rerr)
		}
	}()
	return MeasureDigests(ctx, db, d, users, fromSeq, toSeq, workers, batch)
}

// Only is the plan with its read states only (mutes false) or its mutes
// only (mutes true): the runs that say which control costs what.
func (p *ControlPlan) Only(mutes bool) *ControlPlan {
	c := *p
	if mutes {
		c.Marks = nil
	} else {
		c.Mutes = nil
	}
	return &c
}

// ControlRuns are the runs of the digests with controls, in the rounds'
// order: with the whole plan (Both), its read states only (Read) and its
// mutes only (Mutes).
type ControlRuns struct {
	Both, Read, Mutes []DigestRun
}

// controlsFigure is the digests-with-controls figure: c.Both's runs
// against plain's (the newest-first runs of the same users, windows and
// rounds, both in the rounds' order), paired by round (Paired), whose
// median ratio must be ≥ 90% to pass, and its paragraph, which gives
// c.Read's and c.Mutes' too.
func controlsFigure(plain []DigestRun, c ControlRuns, plan *ControlPlan, users int) (Figure, string) {
	med := median(plain)
	cmed, lo, hi := rateSpread(c.Both)
	paired := pairRuns(plain, c.Both)
	_, self, pg := cmed.PerDigest()
	f := Figure{Key: "digests-controls", Name: fmt.Sprintf("digests with %d mutes and %d read papers per user (newest first)", ControlMutes, ControlRead), Target: "≥ 90% of the rate without",
		Result: fmt.Sprintf("%.0f / s, %s of the rate without (%.0f / s; rates, median of %d: %.0f–%.0f)", cmed.Rate, paired, med.Rate, len(c.Both), lo, hi),
		Value:  cmed.Rate, Pass: paired.Share >= 0.9}
	detail := fmt.Sprintf("Digests with the user's controls: the same %d users and windows as the newest-first digests, measured in turn with them; before each run (untimed) %d of the users "+
		"get up to %d papers each marked read and done in turn (`inbox.PutStates`, %d states in all): every %s of the newest %d papers their window matches (%d states, papers "+
		"the digest must leave out) and the rest the newest papers their feed matches outside the window (papers read before); and up to %d mutes each (`mute.PutMany`, parsed by `mute.Parse`; "+
		"%d in all), drawn from the newest %d papers of their window so that each hides papers the digest would list: %d researchers within the category follow that matched their paper "+
		"(the paper's last author), %d searches for every follow (a title word `ti:…` and a two-word phrase of a title in turn), %d categories' cross-lists (of categories they follow). "+
		"After writing them and after the run, when `inbox.RemoveAllStates` and `mute.RemoveAll` take them off again, the two tables are vacuumed and analyzed and a checkpoint taken (untimed), so a run meets them as a service does, not a second after a bulk write. "+
		"The digests listed %.1f papers each (%.1f without). Per digest in the median run: followfeed + SMTP sink %s, this database's PostgreSQL backends %s. "+
		"Which control costs what, measured in turn with the others too (median of %d each): the read papers alone %s, the mutes alone %s.",
		users, plan.Users, ControlRead, len(plan.Marks), ordinal(controlWindowEvery), windowCandidates, plan.InWindow,
		ControlMutes, len(plan.Mutes), muteSource, plan.Kinds[mute.Researcher], plan.Kinds[mute.Query], plan.Kinds[mute.Category],
		cmed.PapersEach(), med.PapersEach(), msPrecise(self), msPrecise(pg), len(c.Read), alone(plain, c.Read), alone(plain, c.Mutes))
	return f, detail
}

// alone describes runs against plain's (both in the rounds' order): the
// median rate, its ratio paired by round (and by CPU per digest, when
// measured), and the median run's CPU per digest.
func alone(plain, runs []DigestRun) string {
	if len(runs) == 0 {
		return "not measured"
	}
	m := median(runs)
	_, self, pg := m.PerDigest()
	p := pairRuns(plain, runs)
	cpu := ""
	if p.CPU > 0 {
		cpu = fmt.Sprintf(", %.0f%% by CPU per digest", 100*p.CPU)
	}
	return fmt.Sprintf("%.0f / s (%.0f%% of the rate without, paired by round%s; per digest followfeed + SMTP sink %s, PostgreSQL %s)", m.Rate, 100*p.Share, cpu, msPrecise(self), msPrecise(pg))
}

// ordinal is "fourth" for 4 (the small numbers the paragraphs use).
func ordinal(n int) string {
	if w := []string{"", "first", "second", "third", "fourth", "fifth"}; n < len(w) {
		return w[n]
	}
	return fmt.Sprintf("%dth", n)
}
