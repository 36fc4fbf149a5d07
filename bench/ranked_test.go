package bench

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// The ranking's measurements at a tiny scale through the real services:
// every sampled user's ranked feed is rendered (a first render, which
// trains a model, for each user the warm-up did not give one), the
// feedback history and clicks go through Set (one job each) and every
// click stores a new model; the figures are judged by their targets, the
// ranked feeds take load on a real HTTP server, and RemoveRanking leaves
// no feedback, model or job behind.
func TestMeasureRankingLeavesTheDataset(t *testing.T) {
	t.Parallel()
	d, _ := tiny(t, Scale{Users: 30, CategoryFollow: 2, ResearcherFoll: 3, Papers: 1500, Researchers: 60, AuthorsPer: 2, AbstractChars: 300})
	db, ctx := d.DB, context.Background()
	users, err := SampleUsers(ctx, db, 12)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := d.Tokens.TokensMany(ctx, users)
	if err != nil {
		t.Fatal(err)
	}
	hasModel := func(u int64) bool {
		st, err := d.Tokens.LookupRanked(ctx, toks[u])
		if err != nil {
			t.Fatal(err)
		}
		return !st.ModelAt.IsZero()
	}

	rk, err := MeasureRanked(ctx, d, users)
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up trained users[0]; every other user's first render
	// trained theirs.
	if len(rk.Paths) != len(users) || len(rk.Renders) != len(users) || len(rk.First) != len(users)-1 || rk.Papers == 0 || rk.Size == 0 {
		t.Errorf("%d paths, %d renders, %d first renders, %d papers, %d bytes", len(rk.Paths), len(rk.Renders), len(rk.First), rk.Papers, rk.Size)
	}
	for _, u := range users {
		if !hasModel(u) {
			t.Errorf("user %d has no model after the ranked renders", u)
		}
	}
	rec := httptest.NewRecorder()
	d.Handler.ServeHTTP(rec, httptest.NewRequest("GET", rk.Paths[1], nil))
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, ", best first</title>") || strings.Count(body, "<entry>") == 0 {
		t.Errorf("the measured path is no ranked feed with items: %d %.300s", rec.Code, body)
	}

	const history, rounds = 4, 2
	cl, err := MeasureClicks(ctx, d.Ranking, d.Matcher, users, history, rounds)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Users < len(users)/2 || cl.Users+cl.Skipped != len(users) || len(cl.Click) != cl.Users*rounds || len(cl.Set) != len(cl.Click) || len(cl.Train) != len(cl.Click) {
		t.Fatalf("clicks: %d users (%d skipped), %d clicks, %d sets, %d trainings", cl.Users, cl.Skipped, len(cl.Click), len(cl.Set), len(cl.Train))
	}
	for i, c := range cl.Click {
		if c != cl.Set[i]+cl.Train[i] || cl.Set[i] <= 0 || cl.Train[i] <= 0 {
			t.Errorf("click %d: %v ≠ Set %v + Train %v", i, c, cl.Set[i], cl.Train[i])
		}
	}
	rows := 0
	for _, u := range users {
		page, err := d.Ranking.List(ctx, u, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(page.Items)
	}
	if want := cl.Users * (history + rounds); rows != want || testjobs.Count(t, db.Pool, worker.RankTrainArgs{}.Kind()) != want {
		t.Errorf("%d feedback rows and %d training jobs, want %d of each", rows, testjobs.Count(t, db.Pool, worker.RankTrainArgs{}.Kind()), want)
	}

	figs, details := rankingFigures(Levels[0].Targets, rk, cl)
	var keys []string
	for _, f := range figs {
		t.Logf("%s: %s", f.Name, f.Result)
		keys = append(keys, f.Key)
		if f.Value <= 0 || !strings.Contains(f.Result, "p99") {
			t.Errorf("figure %s: %+v", f.Key, f)
		}
	}
	if strings.Join(keys, ",") != "ranked-render,ranked-first,click" || len(details) != 2 {
		t.Errorf("figures %q, %d details", keys, len(details))
	}
	// Judged by their targets: none is met in no time.
	tight, _ := rankingFigures(Targets{Ranked: time.Nanosecond, Click: time.Nanosecond}, rk, cl)
	if tight[0].Pass || tight[2].Pass || !tight[1].Pass {
		t.Errorf("with 1 ns targets: %+v", tight)
	}

	base, stop, err := Serve(d.Handler)
	if err != nil {
		t.Fatal(err)
	}
	rps, err := RankedLoad(base, rk.Paths, 500*time.Millisecond)
	stop()
	if err != nil || rps <= 0 {
		t.Errorf("ranked load: %.0f req/s, %v", rps, err)
	}

	fb, models, err := RemoveRanking(ctx, db)
	if err != nil || fb != rows || models != len(users) {
		t.Errorf("RemoveRanking: %d feedback rows, %d models, %v; want %d, %d", fb, models, err, rows, len(users))
	}
	if n := testjobs.Count(t, db.Pool, worker.RankTrainArgs{}.Kind()); n != 0 {
		t.Errorf("%d training jobs left", n)
	}
	for _, u := range users {
		if hasModel(u) {
			t.Errorf("user %d still has a model", u)
		}
	}
}
