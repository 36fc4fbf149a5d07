package app_test

import (
	"strings"
	"testing"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/worker"
)

// TestBestFirstDigestThroughTheService: the service ranks a best-first
// digest with package ranking (wired in app): a user who follows cs.LG
// and Bob Person, with PATCH /v1/me {"digest": {"order": "best",
// "max_papers": 1, "keep_followed": false}}, gets Bob's paper, pushed
// first, as the one paper shown, saying why (the ranking's reason), with
// its feedback links; the other two are counted by follow.
func TestBestFirstDigestThroughTheService(t *testing.T) {
	t.Parallel()
	w := newDigestWorld(t, "best-reader", fakesmtp.Options{})
	if r := w.c.Do("PUT", "/v1/me/follows/researcher/openalex:A5000000001", w.reader, nil); r.Status != 201 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	if r := w.c.Do("PATCH", "/v1/me", w.reader, map[string]any{"digest": map[string]any{"order": "best", "max_papers": 1, "keep_followed": false}}); r.Status != 200 {
		t.Fatalf("settings: %d %s", r.Status, r.Body)
	}
	papers := []map[string]any{
		{"arxiv_id": "2301.00021", "title": "Sparse attention for long documents", "primary_category": "cs.LG", "categories": []string{"cs.LG"},
			"authors": []map[string]any{{"name": "Bob Person", "ids": []string{"openalex:A5000000001"}}, {"name": "Carol Coauthor"}}},
		{"arxiv_id": "2301.00022", "title": "Graph kernels revisited", "primary_category": "cs.LG", "categories": []string{"cs.LG"}, "authors": "Dan Stranger"},
		{"arxiv_id": "2301.00023", "title": "Bandits with delayed feedback", "primary_category": "cs.LG", "categories": []string{"cs.LG"}, "authors": "Eve Stranger"},
	}
	if r := w.c.Do("POST", "/v1/papers", w.svc, papers); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	w.a.Jobs().WaitCompleted(t, w.db.Pool, worker.MatchArgs{}.Kind(), 1)
	out := w.digestCLI(t, "--user", w.sub)
	for _, want := range []string{"Subject: 3 new papers: Bob Person\n", "Best first for you", "1. Sparse attention for long documents",
		"Why first: by Bob Person, whom you follow", "More like this: " + w.a.URL + "/feedback/ffl_", "Less like this: " + w.a.URL + "/feedback/ffl_",
		"Save:           " + w.a.URL + "/feedback/ffl_", "…and 2 more papers in your feed (2 from cs.LG):"} {
		if !strings.Contains(out, want) {
			t.Errorf("the best-first digest lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Graph kernels revisited") || strings.Contains(out, "Bandits with delayed feedback") {
		t.Errorf("the digest shows more than its budget of one paper:\n%s", out)
	}
}
