package notify

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/match"
)

// build selects and groups the papers of each row's window, with one
// statement for all rows, and loads the details of the papers shown once.
func (d *Digester) build(ctx context.Context, rows []digestRow) ([]DigestContent, error) {
	var qs []match.Query
	var qRow []int
	users := make([]int64, 0, len(rows))
	now := d.now() // snoozed follows deliver nothing (match.Query.At)
	for i, row := range rows {
		users = append(users, row.userID)
		if *row.to > *row.from {
			limit := candidates
			if row.kind == KindCatchUp {
				limit = catchUpCandidates // a pause's window is long
			}
			qs = append(qs, match.Query{UserID: row.userID, AfterSeq: *row.from, UpToSeq: *row.to, Limit: limit, IDsOnly: true, At: now, Unread: true})
			qRow = append(qRow, i)
		}
	}
	// The follows come with the selection (its snapshot): it reads them
	// anyway.
	results := make([]match.Result, len(rows))
	rs, follows, err := d.matcher.MatchedManyFollows(ctx, qs, users)
	if err != nil {
		return nil, err
	}
	for j, r := range rs {
		results[qRow[j]] = r
	}
	ranked := d.rank(ctx, rows, results)
	budgets, err := d.budgets(ctx, rows, ranked)
	if err != nil {
		return nil, err
	}
	plans := make([]digestPlan, len(rows))
	var shown []int64
	seen := map[int64]bool{}
	for i, row := range rows {
		if ranked != nil && row.ranked() {
			order := paperIDs(results[i])
			ranked.Order(row.userID, order)
			plans[i] = planBest(results[i], follows[row.userID], order, budgets[i], row.keepFollowed, row.kind == KindCatchUp)
			plans[i].spent = row.kind == "instant" && budgets[i] == 0 && results[i].Total > 0 && len(plans[i].shownIDs()) == 0
		} else {
			plans[i] = planGroups(results[i], follows[row.userID])
		}
		for _, id := range plans[i].shownIDs() {
			if !seen[id] {
				seen[id] = true
				shown = append(shown, id)
			}
		}
	}
	papers, err := d.matcher.LoadPapers(ctx, shown, catalog.WithoutAbstract)
	if err != nil {
		return nil, err
	}
	details := newDetails(papers)
	feedURLs := map[int64]string{}
	if d.links != nil {
		if feedURLs, err = d.links.FeedURLs(ctx, users); err != nil {
			return nil, err
		}
	}
	remember := map[int64]bool{}
	if d.opened != nil {
		if remember, err = d.opened.RemembersOpened(ctx, users); err != nil {
			return nil, err
		}
	}
	starts, err := d.windowStarts(ctx, rows)
	if err != nil {
		return nil, err
	}
	behind := ""
	if d.health != nil {
		if behind, err = d.health.HarvestBehind(ctx); err != nil {
			return nil, err
		}
	}
	now = d.now()
	out := make([]DigestContent, len(rows))
	for i, row := range rows {
		c := plans[i].fill(details)
		loc := zone(row.tz)
		c.Heading = heading(row, d.now().In(loc))
		c.CatchUp = row.kind == KindCatchUp
		c.Following = followingPhrase(follows[row.userID])
		c.FeedURL = feedURLs[row.userID]
		if c.Omitted > 0 {
			c.InboxURL = d.addrs.InboxURL(plans[i].best)
		}
		c.ManageURL = d.addrs.ManageURL(row.userID, row.epoch)
		opens := remember[row.userID]
		c.UnsubscribeURL = d.addrs.UnsubscribeURL(row.userID, row.epoch)
		// What is the user's own: the "Not by …?" and feedback links, and
		// why a best-first paper ranks (asked once for all it shows).
		var why [][]string
		if plans[i].best {
			var ids []int64
			for _, g := range c.Groups {
				for _, p := range g.Papers {
					ids = append(ids, p.ID)
				}
			}
			why = ranked.Why(row.userID, ids)
		}
		for _, g := range c.Groups {
			for j := range g.Papers {
				p := &g.Papers[j]
				for k := range p.Researchers {
					p.Researchers[k].DisputeURL = d.addrs.DisputeURL(row.userID, row.epoch, p.ArxivID, p.Researchers[k].ID)
				}
				p.Feedback = FeedbackLinks{
					More: d.addrs.FeedbackURL(row.userID, row.epoch, p.ID, feedbackMore),
					Less: d.addrs.FeedbackURL(row.userID, row.epoch, p.ID, feedbackLess),
					Save: d.addrs.FeedbackURL(row.userID, row.epoch, p.ID, feedbackSaved),
				}
				if opens {
					p.Feedback.Open = d.addrs.OpenURL(row.userID, row.epoch, p.ID)
				}
				if len(why) > 0 { // the papers' order is ids' above
					if w := why[0]; len(w) > 0 {
						p.Why = w[:min(len(w), maxWhy)]
					}
					why = why[1:]
				}
			}
		}
		if row.kind != "instant" {
			// Instant alerts go only when something matched; the calendar
			// and the harvest's health are for daily and weekly digests.
			c.HarvestBehind = behind
			c.NoAnnouncement = d.cal != nil && !d.cal.AnnouncedBetween(starts[i], now)
		}
		out[i] = c
	}
	return out, nil
}

// windowStarts is when each row's window began: the user's previous
// digest (the newest ledger row before it; for a preview, the newest of
// all), else one period back from now (a week for weekly digests, a day
// otherwise).
func (d *Digester) windowStarts(ctx context.Context, rows []digestRow) ([]time.Time, error) {
	now := d.now()
	out := make([]time.Time, len(rows))
	users := make([]int64, len(rows))
	ids := make([]int64, len(rows))
	for i, row := range rows {
		out[i] = now.Add(-periodLength(Frequency(row.kind)))
		users[i], ids[i] = row.userID, row.id
	}
	if d.cal == nil {
		return out, nil
	}
	// One probe per row of the (user_id, period) unique index's user_id
	// prefix; a preview (id 0) looks at every row of the user.
	r, err := d.db.Pool.Query(ctx, `
		SELECT w.n, (SELECT max(g.created_at) FROM digests g
		             WHERE g.user_id = w.user_id AND (w.id = 0 OR g.id < w.id) AND g.kind <> 'instant')
		FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS w(user_id, id, n)`, users, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the previous digests of %d users: %w", len(rows), err)
	}
	defer r.Close()
	for r.Next() {
		var n int
		var at *time.Time
		if err := r.Scan(&n, &at); err != nil {
			return nil, err
		}
		if at != nil {
			out[n-1] = *at
		}
	}
	return out, r.Err()
}

// groupPapers arranges matched papers (with their details) into a digest:
// see planGroups for the rules.
func groupPapers(res match.Result, follows []follow.Follow) DigestContent {
	plan := planGroups(res, follows)
	return plan.fill(newDetails(res.Papers))
}

// detail is a shown paper's details as every digest of a batch takes
// them: the loaded paper, not a copy of it (some 400 bytes, copied for
// each paper of each digest, were a third of filling a best-first
// digest, whose papers are shared less between digests), and its authors'
// names, made once.
type detail struct {
	p       *match.Paper
	authors []string
}

// newDetails returns papers' details by id (pointing into papers).
func newDetails(papers []match.Paper) map[int64]*detail {
	out := make(map[int64]*detail, len(papers))
	ds := make([]detail, len(papers))
	for i := range papers {
		p := &papers[i]
		names := make([]string, len(p.Authors))
		for k, a := range p.Authors {
			names[k] = a.Name
		}
		ds[i] = detail{p: p, authors: names}
		out[p.ID] = &ds[i]
	}
	return out
}

// digestPlan is which papers a digest shows, by group, before their details
// are loaded.
type digestPlan struct {
	total, omitted int
	groups         []plannedGroup
	labels         map[string]string
	// best: one list, best first (planBest), with the papers not shown
	// counted by follow (omittedBy).
	best      bool
	omittedBy []FollowCount
	// spent: a best-first instant alert whose day's budget is spent and
	// that shows nothing (DigestContent.spent).
	spent bool
}

type plannedGroup struct {
	first   follow.Target // the follow the group is named after
	key     string        // first.Key()
	label   string
	papers  []*match.Paper // into the Result's Papers: ids and reasons only
	omitted int
	// firsts are, in a best-first list, each paper's most specific
	// reason (the subject names the follows of the best papers).
	firsts []follow.Target
}

// planGroups assigns each paper to the group of its most specific reason (a
// researcher before an institution before a category before a whole archive;
// among equals, the follow made first), with every reason kept; at most
// MaxPerGroup per group and MaxPerDigest in all are shown, the rest counted
// as "more". Groups come in the same order of specificity.
func planGroups(res match.Result, follows []follow.Follow) digestPlan {
	plan := digestPlan{total: res.Total, labels: follow.ReasonLabels(follows)}
	o := newReasonOrder(follows)
	before := o.before
	index := map[string]int{}
	shown, listed := 0, 0
	for pi := range res.Papers {
		p := &res.Papers[pi]
		if len(p.Reasons) == 0 {
			continue
		}
		first, firstKey := o.primary(p)
		i, ok := index[firstKey]
		if !ok {
			i = len(plan.groups)
			index[firstKey] = i
			plan.groups = append(plan.groups, plannedGroup{first: first, key: firstKey, label: plan.labels[firstKey]})
		}
		g := &plan.groups[i]
		listed++
		if len(g.papers) >= MaxPerGroup || shown >= MaxPerDigest {
			g.omitted++
			plan.omitted++
			continue
		}
		if g.papers == nil {
			g.papers = make([]*match.Paper, 0, MaxPerGroup)
		}
		g.papers = append(g.papers, p)
		shown++
	}
	slices.SortStableFunc(plan.groups, func(a, b plannedGroup) int {
		switch {
		case before(a.first, b.first, a.key, b.key):
			return -1
		case before(b.first, a.first, b.key, a.key):
			return 1
		}
		return 0
	})
	// Papers beyond the candidates read count overall.
	plan.omitted += max(res.Total-listed, 0)
	return plan
}

// reasonOrder orders a user's reasons by specificity (a researcher before
// an institution before a category before a whole archive), among equals
// the follow made first.
type reasonOrder struct{ made map[string]time.Time }

func newReasonOrder(follows []follow.Follow) reasonOrder {
	made := make(map[string]time.Time, len(follows))
	for _, f := range follows {
		made[f.Key()] = f.CreatedAt
	}
	return reasonOrder{made: made}
}

// before says whether reason a (key ka) comes before b (key kb).
func (o reasonOrder) before(a, b follow.Target, ka, kb string) bool {
	if pa, pb := specificity(a), specificity(b); pa != pb {
		return pa < pb
	}
	return o.made[ka].Before(o.made[kb])
}

// primary is the first of p's reasons (p has one at least), and its key:
// the follow a digest shows p under.
func (o reasonOrder) primary(p *match.Paper) (follow.Target, string) {
	first, firstKey := p.Reasons[0], p.Reasons[0].Key()
	for _, r := range p.Reasons[1:] {
		if k := r.Key(); o.before(r, first, k, firstKey) {
			first, firstKey = r, k
		}
	}
	return first, firstKey
}

// shownIDs are the papers whose details the plan needs.
func (plan digestPlan) shownIDs() []int64 {
	var ids []int64
	for _, g := range plan.groups {
		for _, p := range g.papers {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// fill builds the content from the plan and the shown papers' details.
func (plan digestPlan) fill(details map[int64]*detail) DigestContent {
	c := DigestContent{Total: plan.total, Omitted: plan.omitted, OmittedBy: plan.omittedBy, spent: plan.spent}
	for _, g := range plan.groups {
		dg := DigestGroup{Name: g.label, Omitted: g.omitted, Papers: make([]DigestPaper, 0, len(g.papers))}
		for k, p := range g.papers {
			dt, ok := details[p.ID]
			if !ok {
				if plan.best {
					c.Omitted++ // withdrawn meanwhile
				} else {
					dg.Omitted++
				}
				continue
			}
			d := dt.p
			if len(p.Events) > 0 || len(d.Events) > 0 {
				// The window's events, with the details' title: on a
				// copy, since the details are every digest's.
				cp := *d
				cp.Events = p.Events
				d = &cp
			}
			if plan.best {
				// The subject names the follows of the best papers.
				name := plan.labels[g.firsts[k].Key()]
				if name == "" {
					name = groupName(g.firsts[k], d)
				}
				if !slices.Contains(c.SubjectNames, name) {
					c.SubjectNames = append(c.SubjectNames, name)
				}
			}
			if dg.Name == "" {
				dg.Name = groupName(g.first, d)
			}
			reasons := make([]string, 0, len(p.Reasons))
			var researchers []ReasonFollow
			for _, r := range p.Reasons {
				name := d.ReasonName(r, plan.labels[r.Key()])
				reasons = append(reasons, name)
				if r.Kind == follow.Researcher {
					researchers = append(researchers, ReasonFollow{ID: r.ID, Name: name})
				}
			}
			dg.Papers = append(dg.Papers, DigestPaper{ID: d.ID, Title: d.Title, Authors: dt.authors, AbsURL: d.AbsURL, PDFURL: d.PDFURL,
				Reasons: reasons, Categories: d.Categories, Published: d.SubmittedAt, ArxivID: d.ArxivID, Researchers: researchers})
		}
		if dg.Name == "" {
			dg.Name = groupName(g.first, &match.Paper{})
		}
		c.Groups = append(c.Groups, dg)
	}
	return c
}

// specificity ranks reasons for grouping: lower is more specific.
func specificity(t follow.Target) int {
	switch {
	case t.Kind == follow.Researcher:
		return 0
	case t.Kind == follow.Institution:
		return 1
	case t.IsArchive():
		return 3
	}
	return 2
}

func groupName(t follow.Target, p *match.Paper) string {
	if t.Kind == follow.Researcher {
		return t.ReasonName("", p.AuthorName)
	}
	if t.Kind == follow.Category && !t.IsArchive() {
		return t.DisplayName()
	}
	return t.ReasonName("", nil)
}

// heading says what the digest is, by its kind: a daily or weekly digest
// and its day, an instant alert, or a digest sent on request (`digest
// --now` outside the schedule, whatever the user's frequency).
func heading(row digestRow, localNow time.Time) string {
	day := localNow.Format("Monday 2 January")
	switch row.kind {
	case "weekly":
		return "Your weekly papers — week of " + day
	case "instant":
		return "New papers just matched your follows"
	case "manual":
		return "Your papers since your last digest, sent on request — " + day
	case KindCatchUp:
		return catchUpHeading(row.period)
	}
	return "Your daily papers — " + day
}

// followKinds are the kinds of follow a footer names, in the digest's
// order of groups, with their nouns (one, many).
var followKinds = [...]struct {
	kind      follow.Kind
	one, many string
}{
	{follow.Researcher, "researcher", "researchers"},
	{follow.Institution, "institution", "institutions"},
	{follow.Category, "category", "categories"}, // archives too
	{follow.Query, "query", "queries"},
	{follow.Paper, "paper", "papers"},
}

// followingPhrase names what follows holds, by kind with counts, as the
// digest's footer says it ("1 researcher, 2 categories and 1
// query"); "" when there are none.
func followingPhrase(follows []follow.Follow) string {
	if len(follows) == 0 {
		return ""
	}
	var counts [len(followKinds)]int
	for _, f := range follows {
		for i, k := range followKinds {
			if f.Kind == k.kind {
				counts[i]++
			}
		}
	}
	var parts []string
	for i, k := range followKinds {
		switch n := counts[i]; {
		case n == 1:
			parts = append(parts, "1 "+k.one)
		case n > 1:
			parts = append(parts, strconv.Itoa(n)+" "+k.many)
		}
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
