package harvest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/harvest"
	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/internal/fake/recorder"
	"followfeed/internal/httpclient"
	"followfeed/openalex"
	"followfeed/paper"
)

// An OAI-PMH response that is small on the wire but inflates past the 64 MiB
// cap (Content-Encoding: gzip, decoded by the transport) is a malformed
// response, not a transient one: one request, no retry, ErrMalformed
// wrapping httpclient.ErrBodyTooLarge. The production client is used
// (httpclient.New with the OAI cap, retries at their default).
func TestOAIResponseInflatingPastTheCapIsNotRetried(t *testing.T) {
	t.Log("hostile: limits")
	bomb := recorder.GzipBomb(t, []byte(`<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-29T12:00:00Z</responseDate><ListRecords>`),
		harvest.OAIMaxBodyBytes+(1<<20))
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed; the test wants a small one", len(bomb))
	}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		recorder.ServeGzip(w, "text/xml", bomb)
	}))
	defer srv.Close()
	var slept atomic.Int32
	c := harvest.NewOAIClient(harvest.OAIConfig{
		BaseURL: srv.URL, PageDelay: -1, Client: httpclient.New(time.Minute, harvest.OAIMaxBodyBytes),
		Sleep: func(ctx context.Context, d time.Duration) error { slept.Add(1); return nil },
	})
	_, err := c.ListRecords(context.Background(), harvest.ListRequest{Set: "cs"})
	if !errors.Is(err, harvest.ErrMalformed) || !errors.Is(err, harvest.ErrTooLarge) || errors.Is(err, harvest.ErrUpstream) {
		t.Fatalf("err = %v, want ErrMalformed wrapping ErrBodyTooLarge, not ErrUpstream", err)
	}
	if n := requests.Load(); n != 1 || slept.Load() != 0 {
		t.Fatalf("%d requests and %d back-off waits, want 1 and none", n, slept.Load())
	}
}

// An OpenAlex response that inflates past the cap is a permanent failure
// of that request's papers, not of the run: with 60 papers due (two
// requests of 50 and 10) and the request holding 2611.00000 answered by a
// gzip bomb, the bomb is asked once, its 50 papers are postponed like
// papers OpenAlex does not know, the other request's papers are enriched,
// the run returns no error (nothing for the job to retry), and the
// source's health says what happened, in public words. The next run does
// not ask the bomb again; once the wait has passed, it does.
func TestEnrichmentPostponesARequestWhoseResponseIsTooLarge(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	in, db := newStore(t)
	ctx := context.Background()
	var ps []paper.Paper
	for i := range 60 {
		ps = append(ps, testPaper(fmt.Sprintf("2611.%05d", i)))
	}
	if _, err := in.Ingest(ctx, ps, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	known := map[string]fakeopenalex.Work{}
	for i := range 60 {
		known[fmt.Sprintf("2611.%05d", i)] = fakeopenalex.Work{Authors: []fakeopenalex.Author{{Name: "Ada Lovelace", ID: fmt.Sprintf("A50%08d", i)}}}
	}
	fake := fakeopenalex.New(known)
	bomb := recorder.GzipBomb(t, []byte(`{"results": [`), openalex.MaxBodyBytes+(1<<20))
	var bombs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("filter"), "arxiv.2611.00000|") || strings.HasSuffix(r.URL.Query().Get("filter"), "arxiv.2611.00000") {
			bombs.Add(1)
			recorder.ServeGzip(w, "application/json", bomb)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := openalex.NewClient(openalex.Config{BaseURL: srv.URL, Client: httpclient.New(time.Minute, openalex.MaxBodyBytes)})
	now := time.Now()
	clock := func() time.Time { return now }
	health := harvest.NewHealth(db, nil, nil, clock)
	e := harvest.NewEnricher(in, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 3, Batch: 100}, nil, clock)
	e.ReportTo(health)
	st, err := e.RunOnce(ctx)
	if err != nil {
		t.Fatalf("the run failed (the job would retry the bomb): %v", err)
	}
	if st.Looked != 60 || st.Refused != 50 || st.Found != 10 || st.Missing != 0 || bombs.Load() != 1 {
		t.Fatalf("run %+v, %d requests to the bomb; want 50 refused, 10 found, one request", st, bombs.Load())
	}
	var src harvest.SourceStatus
	if all, err := health.Status(ctx); err == nil {
		for _, s := range all {
			if s.Source == harvest.SourceOpenAlex {
				src = s
			}
		}
	}
	if src.LastError != "the source's response exceeded the size cap" || src.Errors != 1 {
		t.Errorf("openalex health %+v", src)
	}
	if st, err := e.RunOnce(ctx); err != nil || st.Looked != 0 || bombs.Load() != 1 {
		t.Errorf("the next run: %+v %v, %d requests to the bomb; want nothing due", st, err, bombs.Load())
	}
	now = now.Add(2 * time.Hour)
	if st, err := e.RunOnce(ctx); err != nil || st.Looked != 50 || st.Refused != 50 || bombs.Load() != 2 {
		t.Errorf("after the wait: %+v %v, %d requests to the bomb", st, err, bombs.Load())
	}
}
