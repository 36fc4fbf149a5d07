package ranking_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/relevance"
	"followfeed/worker"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
)

// env is a database with a paper store, follows, matching, a River
// enqueuer and the ranking service.
type env struct {
	t       *testing.T
	ctx     context.Context
	db      *database.DB
	papers  *catalog.Store
	follows *follow.Service
	rank    *ranking.Service
	w       *testpaper.Writer // the papers, about testpaper.Topics
	ids     map[string]int64  // arXiv id → papers.id
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), db: testdb.New(t), w: testpaper.NewWriter(7, "2611", "astro-ph.CO"), ids: map[string]int64{}}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	enq := worker.NewEnqueuer(ins)
	e.papers = catalog.NewStore(e.db, enq)
	e.follows = follow.NewService(e.db)
	e.rank = ranking.New(ranking.Config{DB: e.db, Enqueuer: enq, Matcher: match.NewService(e.db)})
	e.follows.OnFollow(e.rank.FollowChanged)
	e.follows.OnUnfollow(e.rank.FollowChanged)
	return e
}

func (e *env) user(sub string) int64 {
	e.t.Helper()
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: sub})
	if err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

var (
	ann = paper.Author{Name: "Ann One", IDs: []string{"host:1"}}
	bob = paper.Author{Name: "Bob Two", IDs: []string{"host:2"}}
)

// paper makes a paper about topic (title and abstract of its words) by
// authors (strangers when none).
func (e *env) paper(topic string, authors ...paper.Author) paper.Paper {
	return e.w.Paper(topic, authors...)
}

func (e *env) stranger() paper.Author { return e.w.Stranger() }

// store ingests papers and returns their arXiv ids.
func (e *env) store(ps ...paper.Paper) []string {
	e.t.Helper()
	if _, err := e.papers.Ingest(e.ctx, ps, catalog.SourcePush); err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ArxivID)
		err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
			id, err := catalog.LiveID(e.ctx, tx, p.ArxivID)
			e.ids[p.ArxivID] = id
			return err
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return ids
}

// background stores n papers of every topic by strangers.
func (e *env) background(n int) { e.store(e.w.Background(n)...) }

func (e *env) follow(uid int64, kind follow.Kind, id string) {
	e.t.Helper()
	t, err := follow.ParseTarget(string(kind), id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.follows.Follow(e.ctx, uid, t, follow.Options{}); err != nil {
		e.t.Fatal(err)
	}
}

// ranked returns arXiv ids best first for uid.
func (e *env) ranked(uid int64, arxivIDs []string) []string {
	e.t.Helper()
	ids := make([]int64, len(arxivIDs))
	back := map[int64]string{}
	for i, a := range arxivIDs {
		ids[i] = e.ids[a]
		back[ids[i]] = a
	}
	b, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: ids}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	b.Order(uid, ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = back[id]
	}
	return out
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestFeedbackIsRecordedListedAndCleared: Set records one value per user
// and paper (a change of value replaces it, the same value changes
// nothing), List pages newest first, None clears; unknown papers, ids and
// values are refused with errors a person can act on.
func TestFeedbackIsRecordedListedAndCleared(t *testing.T) {
	t.Parallel()
	e := setup(t)
	uid, other := e.user("alice"), e.user("bob")
	ids := e.store(e.paper("lensing"), e.paper("pulsar"), e.paper("solar"))
	for i, v := range []ranking.Value{ranking.More, ranking.Less, ranking.Saved} {
		fb, err := e.rank.Set(e.ctx, uid, "arXiv:"+ids[i], v)
		if err != nil {
			t.Fatal(err)
		}
		if fb.ArxivID != ids[i] || fb.Value != v || fb.Title == "" || fb.UpdatedAt.IsZero() {
			t.Errorf("Set %s: %+v", v, fb)
		}
	}
	jobs := testjobs.Count(t, e.db.Pool, worker.RankTrainArgs{}.Kind())
	if jobs != 3 || e.count(`SELECT changes FROM ranking_models WHERE user_id = $1`, uid) != 3 {
		t.Errorf("three changes: %d jobs, %d changes", jobs, e.count(`SELECT changes FROM ranking_models WHERE user_id = $1`, uid))
	}
	// The same value again: nothing changes, nothing is queued.
	if _, err := e.rank.Set(e.ctx, uid, ids[0], ranking.More); err != nil {
		t.Fatal(err)
	}
	if n := testjobs.Count(t, e.db.Pool, worker.RankTrainArgs{}.Kind()); n != 3 {
		t.Errorf("setting the same value queued a job (%d)", n)
	}
	// Changing a value replaces it.
	if _, err := e.rank.Set(e.ctx, uid, ids[0], ranking.Less); err != nil {
		t.Fatal(err)
	}
	page, err := e.rank.List(e.ctx, uid, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].ArxivID != ids[0] || page.Items[0].Value != ranking.Less || page.Next == "" {
		t.Fatalf("first page: %+v", page)
	}
	rest, err := e.rank.List(e.ctx, uid, page.Next, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Items) != 1 || rest.Next != "" || slices.ContainsFunc(page.Items, func(f ranking.Feedback) bool { return f.ArxivID == rest.Items[0].ArxivID }) {
		t.Errorf("second page: %+v after %+v", rest, page)
	}
	// Clearing removes the row; another user sees none of it.
	if _, err := e.rank.Set(e.ctx, uid, ids[1], ranking.None); err != nil {
		t.Fatal(err)
	}
	if fb, err := e.rank.Get(e.ctx, uid, ids[1]); err != nil || fb.Value != ranking.None {
		t.Errorf("after clearing: %+v %v", fb, err)
	}
	if page, _ := e.rank.List(e.ctx, other, "", 0); len(page.Items) != 0 {
		t.Errorf("another user's list: %+v", page)
	}

	for _, c := range []struct {
		arxivID string
		code    apperr.Code
		field   string
	}{
		{"2611.99999", apperr.NotFound, ""},
		{"not an id", apperr.Invalid, "arxiv_id"},
	} {
		_, err := e.rank.Set(e.ctx, uid, c.arxivID, ranking.More)
		ae, ok := apperr.As(err)
		if !ok || ae.Code != c.code || ae.Field != c.field {
			t.Errorf("Set on %q: %v, want %s %q", c.arxivID, err, c.code, c.field)
		}
	}
	if _, err := ranking.ParseValue("love"); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), `"love"`) {
		t.Errorf("ParseValue(love): %v", err)
	}
	if v, err := ranking.ParseValue(" Save "); v != ranking.Saved || err != nil {
		t.Errorf("ParseValue(save): %q %v", v, err)
	}
	// Cursors List did not make are refused, not read as an empty page
	// or a time PostgreSQL cannot hold (a 500): text that is not base64,
	// and base64 whose two numbers decode but cannot be a row's (before
	// 2000 or in the future, a paper id below 1).
	for _, c := range []string{"garbage!", "garbage", "ZZZZ", "AAA", "__________9_AQ", "abc"} {
		if _, err := e.rank.List(e.ctx, uid, c, 10); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("List from cursor %q, which List did not make: %v", c, err)
		}
	}
}

// TestColdStartRanksFromFollowsAlone: a user who follows Ann One (lensing
// papers, with Bob Two) and has said nothing gets a first model from the
// follows: Bob's paper on another topic and lensing papers by strangers
// rank above pulsar papers by strangers.
func TestColdStartRanksFromFollowsAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(150)
	uid := e.user("alice")
	for range 4 {
		e.store(e.paper("lensing", ann, bob))
	}
	e.follow(uid, follow.Researcher, "host:1")
	var lensing, pulsar []string
	for range 5 {
		lensing = append(lensing, e.store(e.paper("lensing"))...)
		pulsar = append(pulsar, e.store(e.paper("pulsar"))...)
	}
	coauthored := e.store(e.paper("solar", bob, e.stranger()))
	order := e.ranked(uid, slices.Concat(pulsar, lensing, coauthored))
	if order[0] != coauthored[0] {
		t.Errorf("the co-author's paper ranks %d: %q", slices.Index(order, coauthored[0]), order)
	}
	if n := testpaper.CountIn(order[1:6], lensing); n != 5 {
		t.Errorf("%d lensing papers right after it: %q", n, order)
	}
	if n := e.count(`SELECT count(*) FROM ranking_models WHERE user_id = $1 AND model IS NOT NULL AND trained = 0`, uid); n != 1 {
		t.Errorf("the first model was not stored (%d rows)", n)
	}
	why, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: {e.ids[coauthored[0]]}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range why.Why(uid, e.ids[coauthored[0]]) {
		texts = append(texts, r.Text())
	}
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "Bob Two") }) {
		t.Errorf("why the co-author's paper ranks: %q", texts)
	}
}

// TestEveryFollowedPersonIsLearnt: a user follows eight persons, seven
// writing 30 papers each on lensing and one 30 on pulsars (older than the
// others, so none is in the user's flow): more papers than a model learns
// from (maxOwn, 200). Each person's share is learnt, so new pulsar papers
// by strangers rank above new solar ones, a topic nobody followed writes
// on. Were the first persons' 30 papers taken until the bound, the pulsar
// person would be in the model by chance of the follows' order.
func TestEveryFollowedPersonIsLearnt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(150)
	uid := e.user("alice")
	person := func(i int) paper.Author {
		return paper.Author{Name: fmt.Sprintf("Person %d", i), IDs: []string{fmt.Sprintf("host:%d", 10+i)}}
	}
	var ps []paper.Paper
	for range 30 {
		ps = append(ps, e.paper("pulsar", person(0), e.stranger()))
	}
	for i := 1; i <= 7; i++ {
		for range 30 {
			ps = append(ps, e.paper("lensing", person(i), e.stranger()))
		}
	}
	e.store(ps...)
	for i := range 8 {
		e.follow(uid, follow.Researcher, person(i).IDs[0])
	}
	var solar, pulsar []string
	for range 5 {
		solar = append(solar, e.store(e.paper("solar"))...)
		pulsar = append(pulsar, e.store(e.paper("pulsar"))...)
	}
	order := e.ranked(uid, slices.Concat(solar, pulsar))
	if n := testpaper.CountIn(order[:5], pulsar); n != 5 {
		t.Errorf("%d pulsar papers in the top 5, the followed pulsar person not learnt: %q", n, order)
	}
}

// TestLessMovesATopicDownAfterTheJob: the user follows Ann, who writes on
// lensing and pulsars; after five pulsar papers marked "less" and the
// training job's run, new pulsar papers rank below every lensing one.
func TestLessMovesATopicDownAfterTheJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(150)
	uid := e.user("alice")
	for range 4 {
		e.store(e.paper("lensing", ann, e.stranger()), e.paper("pulsar", ann, e.stranger()))
	}
	e.follow(uid, follow.Researcher, "host:1")
	var marked []string
	for range 5 {
		marked = append(marked, e.store(e.paper("pulsar"))...)
	}
	var lensing, pulsar []string
	for range 5 {
		lensing = append(lensing, e.store(e.paper("lensing"))...)
		pulsar = append(pulsar, e.store(e.paper("pulsar"))...)
	}
	cands := slices.Concat(lensing, pulsar)
	cold := e.ranked(uid, cands)
	if n := testpaper.CountIn(cold[:5], pulsar); n < 2 {
		t.Fatalf("cold start: %d pulsar papers in the top 5 (%q); the test needs them there first", n, cold)
	}
	for _, id := range marked {
		if _, err := e.rank.Set(e.ctx, uid, id, ranking.Less); err != nil {
			t.Fatal(err)
		}
	}
	// The stored model is stale until the job retrains it.
	if n := e.count(`SELECT count(*) FROM ranking_models WHERE user_id = $1 AND trained < changes`, uid); n != 1 {
		t.Fatalf("after feedback the model is not due for training")
	}
	trained, err := e.rank.Train(e.ctx, uid)
	if err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	if again, err := e.rank.Train(e.ctx, uid); err != nil || again {
		t.Errorf("a second Train with nothing new: trained %v, %v", again, err)
	}
	after := e.ranked(uid, cands)
	lastLensing := 0
	for i, id := range after {
		if slices.Contains(lensing, id) {
			lastLensing = i
		}
	}
	if lastLensing != len(lensing)-1 {
		t.Errorf("after 5 pulsar papers marked less: %q", after)
	}
}

// TestLessMovesATopicDownForACategoryFollower: a user who follows only a
// category (no person: their flow is what the category brings) marks
// five pulsar papers "less"; after the training job, new pulsar papers
// rank below every new lensing one. Without the flow as examples the
// model had nothing to learn against and the marks changed nothing.
func TestLessMovesATopicDownForACategoryFollower(t *testing.T) {
	t.Parallel()
	e := setup(t)
	uid := e.user("carol")
	e.follow(uid, follow.Category, "astro-ph.CO")
	e.background(150) // every topic, all in astro-ph.CO: the user's flow
	var marked []string
	for range 5 {
		marked = append(marked, e.store(e.paper("pulsar"))...)
	}
	var lensing, pulsar []string
	for range 5 {
		lensing = append(lensing, e.store(e.paper("lensing"))...)
		pulsar = append(pulsar, e.store(e.paper("pulsar"))...)
	}
	cands := slices.Concat(lensing, pulsar)
	if cold := e.ranked(uid, cands); testpaper.CountIn(cold[:5], lensing) == 5 {
		t.Fatalf("lensing first before any mark (%q): the test shows nothing", cold)
	}
	for _, id := range marked {
		if _, err := e.rank.Set(e.ctx, uid, id, ranking.Less); err != nil {
			t.Fatal(err)
		}
	}
	// The marks are counted, their training not run: the topics are
	// behind (whether the model is the cold start's or none yet).
	if topics, behind, err := e.rank.Topics(e.ctx, uid); err != nil || !behind || len(topics) != 0 {
		t.Errorf("Topics before the training: %+v, behind %v, %v; want none, behind", topics, behind, err)
	}
	if trained, err := e.rank.Train(e.ctx, uid); err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	if after := e.ranked(uid, cands); testpaper.CountIn(after[:5], lensing) != 5 {
		t.Errorf("after 5 pulsar papers marked less: %q", after)
	}
	// What the marks did to their category is kept with the model: the
	// settings page says it.
	topics, behind, err := e.rank.Topics(e.ctx, uid)
	if err != nil || behind || len(topics) != 1 {
		t.Fatalf("Topics: %+v, behind %v, %v; want the one category, not behind", topics, behind, err)
	}
	if tp := topics[0]; tp.Category != "astro-ph.CO" || tp.Less != 5 || tp.More != 0 || tp.Share != 1 || !tp.Fewer() {
		t.Errorf("Topics: %+v, want astro-ph.CO fewer, 5 less, whole", tp)
	}
	// A mark the job has not learnt yet: the topics are one change behind.
	if _, err := e.rank.Set(e.ctx, uid, marked[0], ranking.None); err != nil {
		t.Fatal(err)
	}
	if topics, behind, err := e.rank.Topics(e.ctx, uid); err != nil || !behind || len(topics) != 1 || topics[0].Less != 5 {
		t.Errorf("Topics before the job: %+v, behind %v, %v; want the trained ones, behind", topics, behind, err)
	}
	if _, err := e.rank.Train(e.ctx, uid); err != nil {
		t.Fatal(err)
	}
	if topics, behind, err := e.rank.Topics(e.ctx, uid); err != nil || behind || len(topics) != 1 || topics[0].Less != 4 || topics[0].Share >= 1 {
		t.Errorf("Topics after a mark was cleared: %+v, behind %v, %v; want 4 less, part of the effect", topics, behind, err)
	}
	// A user without a model: none.
	if topics, behind, err := e.rank.Topics(e.ctx, e.user("dave")); err != nil || behind || topics != nil {
		t.Errorf("Topics of a user without a model: %+v, %v, %v", topics, behind, err)
	}
}

// TestFollowChangesRetrainOnlyUsersWithAModel: a follow made or removed
// counts a change for a user who has a model (their changes share one
// training job, FollowRetrainDelay later), and nothing for one who has
// none yet.
func TestFollowChangesRetrainOnlyUsersWithAModel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ranked, fresh := e.user("ranked"), e.user("fresh")
	e.store(e.paper("lensing", ann))
	e.ranked(ranked, nil) // no papers: still a first model
	if _, err := e.rank.Models(e.ctx, []int64{ranked}); err != nil {
		t.Fatal(err)
	}
	e.follow(ranked, follow.Researcher, "host:1")
	e.follow(fresh, follow.Researcher, "host:1")
	if n := e.count(`SELECT count(*) FROM ranking_models WHERE user_id = $1`, fresh); n != 0 {
		t.Errorf("a follow gave a user without a model a row")
	}
	if n := e.count(`SELECT changes FROM ranking_models WHERE user_id = $1`, ranked); n != 1 {
		t.Errorf("a follow of a ranked user counted %d changes", n)
	}
	t1, _ := follow.ParseTarget("researcher", "host:1")
	if _, err := e.follows.Unfollow(e.ctx, ranked, t1); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT changes FROM ranking_models WHERE user_id = $1`, ranked); n != 2 {
		t.Errorf("an unfollow counted to %d changes, want 2", n)
	}
	// Both changes wait for one training, FollowRetrainDelay later.
	jobs := testjobs.List(t, e.db.Pool, worker.RankTrainArgs{}.Kind())
	if len(jobs) != 1 || jobs[0].State != rivertype.JobStateScheduled || time.Until(jobs[0].ScheduledAt) < ranking.FollowRetrainDelay-time.Minute {
		for _, j := range jobs {
			t.Logf("job %d: %s, scheduled in %s", j.ID, j.State, time.Until(j.ScheduledAt))
		}
		t.Errorf("%d training jobs, want one scheduled about %s later for both changes", len(jobs), ranking.FollowRetrainDelay)
	}
	if behind, err := e.rank.Behind(e.ctx, ranked); err != nil || !behind {
		t.Errorf("before the job: behind %v (%v), want true", behind, err)
	}
	if trained, err := e.rank.Train(e.ctx, ranked); err != nil || !trained {
		t.Errorf("the job's training: trained %v (%v)", trained, err)
	}
	if behind, err := e.rank.Behind(e.ctx, ranked); err != nil || behind {
		t.Errorf("after the job: behind %v (%v), want false", behind, err)
	}
	// A user without a row has no model to keep: the job does nothing
	// (the first surface that ranks for them trains one, Models).
	if trained, err := e.rank.Train(e.ctx, fresh); err != nil || trained {
		t.Errorf("training a user without a row: trained %v, %v", trained, err)
	}
	if n := e.count(`SELECT count(*) FROM ranking_models WHERE user_id = $1`, fresh); n != 0 {
		t.Errorf("Train gave a user without a row a model")
	}
}

// TestRankPapersSortsMatchedPapersBestFirst: RankPapers orders a user's
// matched papers (match.Paper, as surfaces hold them) as Batch.Order
// orders their ids, in place, and its batch explains them.
func TestRankPapersSortsMatchedPapersBestFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(100)
	uid := e.user("alice")
	for range 3 {
		e.store(e.paper("lensing", ann, e.stranger()))
	}
	e.follow(uid, follow.Researcher, "host:1")
	var ps []match.Paper
	var ids []string
	for range 4 {
		for _, p := range []paper.Paper{e.paper("pulsar"), e.paper("lensing")} {
			ids = append(ids, e.store(p)...)
			ps = append(ps, match.Paper{ID: e.ids[p.ArxivID], Paper: p})
		}
	}
	want := e.ranked(uid, ids)
	b, err := e.rank.RankPapers(e.ctx, uid, ps)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.ArxivID)
	}
	if !slices.Equal(got, want) || slices.Equal(got, ids) {
		t.Errorf("RankPapers: %q, Order: %q (given %q)", got, want, ids)
	}
	if len(b.Why(uid, ps[0].ID)) == 0 {
		t.Errorf("no reason for the best paper %s", ps[0].ArxivID)
	}
}

// TestOrderSortsAnyIDsByTheirScores: Batch.Order sorts the ids it is
// given by their scores (ties, and ids not ranked, which score 0, in the
// order given), whether they are the ids ranked in their order (a
// digest's candidates) or others; sorting the very slice Rank was given
// changes no score.
func TestOrderSortsAnyIDsByTheirScores(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(100)
	uid := e.user("alice")
	e.store(e.paper("lensing", ann, e.stranger()))
	e.follow(uid, follow.Researcher, "host:1")
	var ids []int64
	for range 4 {
		for _, p := range []paper.Paper{e.paper("pulsar"), e.paper("lensing")} {
			e.store(p)
			ids = append(ids, e.ids[p.ArxivID])
		}
	}
	b, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: ids}, nil)
	if err != nil {
		t.Fatal(err)
	}
	score := map[int64]float32{}
	for _, id := range ids {
		score[id] = b.Score(uid, id)
	}
	sorted := func(name string, got []int64) {
		t.Helper()
		for i := 1; i < len(got); i++ {
			if score[got[i]] > score[got[i-1]] {
				t.Errorf("%s: %v not best first (scores %v)", name, got, score)
				return
			}
		}
	}
	// Why says of each paper what a batch of that paper alone says (its
	// words are the ones Rank found for it, not another's), and the paper
	// scores the same to the bit: the batch reads the model's weights
	// through its lexicon of the papers' features, a batch of one paper
	// from the model's table. (Four more users of the same papers make
	// the lexicon pay: relevance.LexiconPays.)
	shared := map[int64][]int64{uid: ids}
	e.store(e.paper("pulsar", bob, e.stranger()))
	var others []int64 // users of another model: they follow Bob
	for _, name := range []string{"bob", "carol", "dan", "erin"} {
		u := e.user(name)
		e.follow(u, follow.Researcher, "host:2")
		shared[u] = ids
		others = append(others, u)
	}
	b, err = e.rank.Rank(e.ctx, shared, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ranking.ReadThroughLexicon(b, uid) {
		t.Fatal("a batch of 5 users of 8 papers did not read the model through its lexicon: the lexicon's scores are not tested")
	}
	words := 0
	for _, id := range ids {
		one, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: {id}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ranking.ReadThroughLexicon(one, uid) {
			t.Fatal("a batch of one paper read the model through a lexicon: the table's scores are not tested")
		}
		if got, want := b.Score(uid, id), one.Score(uid, id); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("paper %d: scores %v in the batch, %v alone", id, got, want)
		}
		got, want := b.Why(uid, id), one.Why(uid, id)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("paper %d: Why %v in the batch, %v alone", id, got, want)
		}
		for _, r := range got {
			if r.Kind == relevance.ReasonWords {
				words++
			}
		}
	}
	if words == 0 {
		t.Error("no words reason: Why's words are not tested")
	}
	// WhyMany, which explains a user's papers through the lexicon's
	// dense weights, says the same of each, and nothing of a paper the
	// batch did not rank; so it does for a batch of one paper. (Another
	// user's papers are explained first: the scorer WhyMany reuses held
	// their model.)
	otherWhy := b.WhyMany(others[0], ids)
	many := b.WhyMany(uid, append(slices.Clone(ids), -1))
	if !ranking.ReadThroughLexicon(b, others[0]) || fmt.Sprint(otherWhy) == fmt.Sprint(many[:len(ids)]) {
		t.Fatal("the batch's users are explained alike: WhyMany's model is not tested")
	}
	for i, id := range ids {
		one, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: {id}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(many[i]), fmt.Sprint(one.Why(uid, id)); got != want {
			t.Errorf("paper %d: WhyMany %v in the batch, Why %v alone", id, got, want)
		}
		if got, want := fmt.Sprint(one.WhyMany(uid, []int64{id})[0]), fmt.Sprint(one.Why(uid, id)); got != want {
			t.Errorf("paper %d: WhyMany %v alone, Why %v", id, got, want)
		}
	}
	// The papers' reasons share one array: each is capped at its end, so
	// a caller appending to one does not write over the next.
	second := fmt.Sprint(many[1])
	if len(many[0]) == 0 || len(many[1]) == 0 {
		t.Fatal("the first two papers have no reasons: the shared array is not tested")
	}
	_ = append(many[0], relevance.Reason{Kind: relevance.ReasonCites, ID: "appended"})
	if got := fmt.Sprint(many[1]); got != second {
		t.Errorf("appending to the first paper's reasons changed the second's: %s, was %s", got, second)
	}
	if len(many) != len(ids)+1 || many[len(ids)] != nil {
		t.Errorf("WhyMany of %d papers and one not ranked: %d answers, the last %v", len(ids), len(many), many[len(many)-1])
	}
	given := slices.Clone(ids)
	b.Order(uid, ids) // the slice Rank was given
	sorted("the ids ranked", ids)
	if slices.Equal(ids, given) {
		t.Errorf("the order did not change: %v", ids)
	}
	for id, s := range score {
		if got := b.Score(uid, id); got != s {
			t.Errorf("paper %d scores %v after Order, %v before", id, got, s)
		}
	}
	other := append(slices.Clone(given), 1<<40, 1<<40+1, 1<<40+2) // not ranked: 0, ties
	slices.Reverse(other)
	in := slices.Clone(other)
	b.Order(uid, other)
	sorted("other ids", other)
	if len(other) != len(in) || !slices.Contains(other, 1<<40) || !slices.Contains(other, 1<<40+1) || !slices.Contains(other, 1<<40+2) {
		t.Errorf("Order lost or added ids: %v", other)
	}
	// Ties keep the order given: the unranked ids came last first.
	for i := 1; i < len(other); i++ {
		if b.Score(uid, other[i]) == b.Score(uid, other[i-1]) && slices.Index(in, other[i]) < slices.Index(in, other[i-1]) {
			t.Errorf("tied papers %d and %d out of the order given (%v): %v", other[i-1], other[i], in, other)
		}
	}
}

// TestBatchesOfARunShareALexicon: a batch whose papers the last batch's
// lexicon holds is scored through it (a digest run's batches share the
// day's papers); a batch with some papers it lacks gets a new one that
// holds the earlier papers too; a batch of other papers gets its own.
// The scores are the same however the papers are held: each is the
// score a batch of that paper alone gives, to the bit.
func TestBatchesOfARunShareALexicon(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(60)
	var users []int64
	for i, name := range []string{"alice", "bob", "carol", "dan", "erin"} {
		u := e.user(name)
		e.follow(u, follow.Researcher, fmt.Sprintf("host:%d", 1+i%2))
		users = append(users, u)
	}
	e.store(e.paper("lensing", ann, e.stranger()), e.paper("pulsar", bob, e.stranger()))
	var ids []int64
	for range 12 {
		for _, p := range []paper.Paper{e.paper("pulsar"), e.paper("lensing"), e.paper("galaxy")} {
			e.store(p)
			ids = append(ids, e.ids[p.ArxivID])
		}
	}
	rank := func(papers []int64) *ranking.Batch {
		t.Helper()
		want := map[int64][]int64{}
		for _, u := range users {
			want[u] = papers
		}
		b, err := e.rank.Rank(e.ctx, want, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ranking.ReadThroughLexicon(b, users[0]) {
			t.Fatalf("a batch of %d users of %d papers did not read through a lexicon", len(users), len(papers))
		}
		for _, id := range papers[:3] {
			one, err := e.rank.Rank(e.ctx, map[int64][]int64{users[0]: {id}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := b.Score(users[0], id), one.Score(users[0], id); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("paper %d: scores %v in the batch, %v alone", id, got, want)
			}
		}
		return b
	}
	first := rank(ids[:20])
	lex, _ := ranking.LexiconOf(first, ids[0])
	// Papers the first batch had: its lexicon.
	if got, _ := ranking.LexiconOf(rank(ids[5:15]), ids[5]); got != lex {
		t.Error("a batch of papers the kept lexicon holds made another")
	}
	// Most of them, and a few more: a new lexicon, which holds the first
	// batch's papers too.
	grown := rank(ids[10:26])
	got, _ := ranking.LexiconOf(grown, ids[10])
	if got == lex {
		t.Fatal("a batch with papers the kept lexicon lacks was scored through it")
	}
	if _, ok := ranking.LexiconOf(grown, ids[0]); !ok {
		t.Error("the lexicon of a batch of the same run does not hold the earlier batch's papers")
	}
	if again, _ := ranking.LexiconOf(rank(ids[:26]), ids[0]); again != got {
		t.Error("a batch of the papers of both earlier ones made another lexicon")
	}
	// Other papers: a lexicon of their own.
	other := rank(ids[26:])
	if _, ok := ranking.LexiconOf(other, ids[0]); ok {
		t.Error("a batch of other papers got a lexicon holding the earlier run's")
	}
}
