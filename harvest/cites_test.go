package harvest_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/harvest"
	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/match"
	"followfeed/openalex"
	"followfeed/paper"
)

// A newly enriched paper whose OpenAlex referenced_works include a
// followed paper's work (the followed paper resolved through its arXiv
// DOI) tells the paper's followers "Cites: <title>", once; the citing
// paper is the item. The citing work is the recorded OpenAlex work
// W2741809807 (its real 45 referenced works); the followed paper is known
// to the fake as W1560783210, the first of them.
func TestEnrichmentTellsAFollowedPaperItIsCited(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	var work map[string]any
	if err := json.Unmarshal(mustRead("testdata/openalex/work-W2741809807.json"), &work); err != nil {
		t.Fatal(err)
	}
	refs, _ := work["referenced_works"].([]any)
	if len(refs) != 45 || refs[0] != "https://openalex.org/W1560783210" {
		t.Fatalf("the recorded work's references: %d, first %v", len(refs), refs[0])
	}
	cited := testPaper("2609.00010", func(p *paper.Paper) { p.Title = "The state of OA" })
	citing := testPaper("2609.00020")
	unrelated := testPaper("2609.00030")
	if _, err := in.Ingest(ctx, []paper.Paper{cited, citing, unrelated}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	follows := follow.NewService(db)
	follows.OnFollow(in.BackfillHook(nil))
	for _, id := range []string{"2609.00010", "2609.00030"} {
		if _, _, err := follows.Follow(ctx, u.ID, follow.Target{Kind: follow.Paper, ID: id}, follow.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	fake := fakeopenalex.New(map[string]fakeopenalex.Work{
		"2609.00010": {ID: "https://openalex.org/W1560783210", Authors: []fakeopenalex.Author{{Name: "Ada Lovelace", ID: "A5000000001"}}},
		"2609.00030": {Authors: []fakeopenalex.Author{{Name: "Ada Lovelace", ID: "A5000000001"}}},
	})
	fake.AddRecorded("2609.00020", work)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	client := openalex.NewClient(openalex.Config{BaseURL: ts.URL, MaxRetries: -1})
	now := time.Now()
	e := harvest.NewEnricher(in, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 2, Batch: 100}, nil,
		func() time.Time { return now })
	if st, err := e.RunOnce(ctx); err != nil || st.Found != 3 {
		t.Fatalf("enrichment: %+v %v", st, err)
	}
	if n := count(t, db, `SELECT count(*) FROM papers WHERE arxiv_id = '2609.00010' AND openalex_id = 'W1560783210'`); n != 1 {
		t.Fatal("the followed paper's work was not stored")
	}
	rows := func() int {
		return count(t, db, `SELECT count(*) FROM paper_keys k JOIN papers p ON p.id = k.paper_id
			WHERE k.event = 'cites' AND k.key = 'paper:2609.00010' AND p.arxiv_id = '2609.00020' AND k.detail = 'The state of OA'`)
	}
	if rows() != 1 || count(t, db, `SELECT count(*) FROM paper_keys WHERE event = 'cites'`) != 1 {
		t.Fatalf("cites rows: %d of %d", rows(), count(t, db, `SELECT count(*) FROM paper_keys WHERE event = 'cites'`))
	}
	got, err := match.NewService(db).Matched(ctx, match.Query{UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Papers) != 1 || got.Papers[0].ArxivID != "2609.00020" || got.Papers[0].EventID() != "cites:2609.00010" ||
		len(got.Papers[0].Reasons) != 1 || got.Papers[0].ReasonName(got.Papers[0].Reasons[0], "") != "Cites: The state of OA" {
		t.Fatalf("the follower's matches: %+v", got.Papers)
	}

	// Enriched again (a later lookup of the same paper): no second event.
	if _, err := db.Pool.Exec(ctx, `UPDATE papers SET enrich_after = now() - interval '1 minute' WHERE arxiv_id = '2609.00020'`); err != nil {
		t.Fatal(err)
	}
	if st, err := e.RunOnce(ctx); err != nil || st.Found != 1 {
		t.Fatalf("second enrichment: %+v %v", st, err)
	}
	if rows() != 1 {
		t.Errorf("a second enrichment told the citation again: %d rows", rows())
	}

	// A paper followed later without a known work is made due for a lookup.
	late := testPaper("2609.00040", func(p *paper.Paper) {
		p.Authors = []paper.Author{{Name: "Grace Hopper", IDs: []string{"orcid:0000-0002-1825-0097"}}}
	})
	if _, err := in.Ingest(ctx, []paper.Paper{late}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	due, _ := in.DueForEnrichment(ctx, time.Now(), 10)
	if slices.Contains(due, "2609.00040") {
		t.Fatal("a paper pushed with ids is due for enrichment before anyone follows it")
	}
	if _, _, err := follows.Follow(ctx, u.ID, follow.Target{Kind: follow.Paper, ID: "2609.00040"}, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	due, _ = in.DueForEnrichment(ctx, time.Now().Add(time.Second), 10)
	if !slices.Contains(due, "2609.00040") {
		t.Errorf("following a paper without a known work did not schedule its lookup: due %v", due)
	}
}
