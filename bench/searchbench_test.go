package bench

import (
	"context"
	"testing"

	"followfeed/follow"
	"followfeed/notify"
	"followfeed/search"
)

// The query measurement at a tiny scale through the real services:
// every size's ingest writes one query key row per match that MatchBatch
// finds for the same searches, the sampled users' feeds are rendered,
// and at the end no query is left and, once the batch is removed,
// the dataset is as it was. The match measurement gives users instant
// alerts, and the digests of its window are all sent, before that.
func TestMeasureSearchesLeavesTheDataset(t *testing.T) {
	t.Parallel()
	s := Scale{Users: 60, CategoryFollow: 2, ResearcherFoll: 2, Papers: 2000, Researchers: 100, AuthorsPer: 2, AbstractChars: 100}
	d, svc := tiny(t, s)
	d.SearchSizes = []int{300, 900}
	db, ctx := d.DB, context.Background()
	var papers, keys, follows int
	counts := func() (int, int, int) {
		var p, k, f int
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM papers), (SELECT count(*) FROM paper_keys), (SELECT count(*) FROM follows)`).Scan(&p, &k, &f); err != nil {
			t.Fatal(err)
		}
		return p, k, f
	}
	papers, keys, follows = counts()
	v, err := NewVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	batch := batchPapers(300, s, v, 1)
	mr, err := MeasureMatch(ctx, db, d.Papers, d.Matcher, batch)
	if err != nil {
		t.Fatal(err)
	}
	instant := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM digest_schedules WHERE frequency = 'instant'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if mr.Instant == 0 || instant() != mr.Instant {
		t.Errorf("%d users given instant alerts, %d schedules say so", mr.Instant, instant())
	}
	sample, err := SampleUsers(ctx, db, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The digests of a window through the real Digester (to MAIL_DIR):
	// every one is sent, and their ledger rows are gone afterwards.
	run, err := MeasureDigests(ctx, db, svc.Digester(), sample, mr.FromSeq, mr.ToSeq, 2, 3)
	if err != nil || run.Digests != len(sample) || run.Sent != len(sample) {
		t.Errorf("digests: %+v, %v", run, err)
	}
	// Best first, within a budget of 5: every digest sent, none listing
	// more than the budget and the followed persons' papers, and the users
	// back to newest first afterwards.
	best, err := MeasureDigestsOrdered(ctx, db, svc.Digester(), sample, mr.FromSeq, mr.ToSeq, 2, 3, notify.OrderBest, 5)
	if err != nil || best.Sent != len(sample) || best.Listed == 0 {
		t.Errorf("best-first digests: %+v, %v", best, err)
	}
	for _, u := range sample {
		if p, err := notify.NewPreferences(db, nil, nil).Get(ctx, u); err != nil || p.Digest.Order != notify.OrderNewest {
			t.Errorf("user %d after the best-first run: %+v, %v", u, p.Digest, err)
		}
	}
	var ledger int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM digests`).Scan(&ledger); err != nil || ledger != 0 {
		t.Errorf("%d ledger rows left (%v)", ledger, err)
	}
	res, err := MeasureSearches(ctx, d, s, v, batch, sample, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 || res.Runs[0].Searches != 0 || res.Runs[2].Searches != 900 {
		t.Fatalf("runs %+v", res.Runs)
	}
	// What the ingest wrote is what MatchBatch finds for the same searches.
	cats, err := SearchCategories(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	drawn, _ := DrawSearches(v, cats, s.Researchers, previewDocs(v, s, 3000, 2), 900, 3)
	docs := make([]*search.Doc, len(batch))
	for i := range batch {
		p := batch[i]
		p.Normalize(true)
		docs[i] = p.Doc()
	}
	for _, r := range res.Runs {
		qs := make([]*search.Query, r.Searches)
		for i := range qs {
			if qs[i], err = follow.CompileQuery(drawn[i]); err != nil {
				t.Fatal(err)
			}
		}
		want := 0
		for _, h := range search.MatchBatch(qs, docs) {
			want += len(h)
		}
		if r.QueryKeys != want {
			t.Errorf("%d searches: %d query key rows, MatchBatch finds %d matches", r.Searches, r.QueryKeys, want)
		}
	}
	if res.Runs[2].QueryKeys == 0 || res.Runs[2].QueryKeys <= res.Runs[1].QueryKeys {
		t.Errorf("query key rows do not grow with the searches: %+v", res.Runs)
	}
	if res.RenderBefore[1] == 0 || res.RenderAfter[1] == 0 || res.FeedQueryItems == 0 {
		t.Errorf("renders %v / %v, %d feed items through searches", res.RenderBefore, res.RenderAfter, res.FeedQueryItems)
	}
	active, err := func() ([]string, error) {
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx)
		return follow.ActiveQueries(ctx, tx)
	}()
	if err != nil || len(active) != 0 {
		t.Errorf("%d queries left (%v)", len(active), err)
	}
	RemoveBatch(ctx, db)
	if p, k, f := counts(); p != papers || k != keys || f != follows || instant() != 0 {
		t.Errorf("dataset after the run: %d papers, %d keys, %d follows, %d instant users; before: %d, %d, %d, none",
			p, k, f, instant(), papers, keys, follows)
	}
	figs, details, section := searchFigures(res, len(batch))
	if len(figs) != 3 || len(details) != 3 || section == "" {
		t.Errorf("figures %v, %d details", figs, len(details))
	}
}
