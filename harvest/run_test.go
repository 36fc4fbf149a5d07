package harvest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/openalex"
	"followfeed/paper"
)

// recordedOAI serves the recorded OAI-PMH responses: the arXivRaw page
// (with a resumption token) for a new run, then the complete arXiv-format
// list for that token.
func recordedOAI() *oaipmh.Replay {
	return &oaipmh.Replay{
		First:   mustRead("testdata/oai/listrecords-arXivRaw-with-resumptiontoken.xml"),
		Next:    mustRead("testdata/oai/listrecords-arXiv-complete-list.xml"),
		Expired: mustRead("testdata/oai/error-badResumptionToken.xml"),
	}
}

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return b
}

func newHarvester(t *testing.T, srv *oaipmh.Replay) (*harvest.Harvester, *database.DB) {
	t.Helper()
	in, db := newStore(t)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw,
		PageDelay: -1, MaxRetries: -1})
	now := func() time.Time { return time.Date(2015, 1, 6, 12, 0, 0, 0, time.UTC) }
	return harvest.NewHarvester(db, client, in, []string{"cs"}, nil, now), db
}

func TestHarvestYieldsTheRecordedRecordsAndASecondRunAddsNothing(t *testing.T) {
	t.Parallel()
	srv := recordedOAI()
	h, db := newHarvester(t, srv)
	ctx := context.Background()
	st, err := h.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pages != 2 || st.Records != 8 || st.New != 8 {
		t.Fatalf("first run: %+v", st)
	}
	q := srv.Queries()
	if len(q) != 2 || !strings.Contains(q[0], "metadataPrefix=arXivRaw") || !strings.Contains(q[0], "set=cs") ||
		!strings.Contains(q[0], "from=2015-01-04") || q[1] != "resumptionToken=726959%7C1001&verb=ListRecords" {
		t.Fatalf("requests: %q", q)
	}
	// Exact records: ids, versions, categories, authors.
	type row struct {
		Version    int
		Primary    string
		Categories []string
		Authors    []paper.Author
	}
	got := map[string]row{}
	rows, _ := db.Pool.Query(ctx, `SELECT arxiv_id, version, primary_category, categories, authors FROM papers`)
	for rows.Next() {
		var id string
		var r row
		var authors []byte
		if err := rows.Scan(&id, &r.Version, &r.Primary, &r.Categories, &authors); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(authors, &r.Authors)
		got[id] = r
	}
	want := map[string]struct {
		version int
		cats    []string
		authors []string
	}{
		"0704.0471":      {1, []string{"nucl-ex", "nucl-th"}, []string{"D.V. Shetty", "S.J. Yennello", "G.A. Souliotis"}},
		"0704.0716":      {4, []string{"math-ph", "math.MP"}, []string{"Christoph Richard"}},
		"1412.8544":      {1, []string{"cs.DM"}, []string{"Sander Uijlen", "Bas Westerbaan"}},
		"hep-th/9504118": {1, []string{"hep-th"}, []string{"M. Requardt"}},
	}
	if len(got) != 8 {
		t.Errorf("%d papers stored, want 8", len(got))
	}
	for id, w := range want {
		r, ok := got[id]
		if !ok {
			t.Errorf("%s missing", id)
			continue
		}
		var names []string
		for _, a := range r.Authors {
			names = append(names, a.Name)
		}
		if r.Version != w.version || !slices.Equal(r.Categories, w.cats) || r.Primary != w.cats[0] || !slices.Equal(names, w.authors) {
			t.Errorf("%s: %+v, want %+v", id, r, w)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM papers WHERE enrich_after IS NOT NULL`); n != 8 {
		t.Errorf("%d papers due for enrichment, want 8", n)
	}
	keys := count(t, db, `SELECT count(*) FROM paper_keys`)
	jobs := matchJobs(t, db)

	st, err = h.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.New != 0 || st.Replaced != 0 || st.Updated != 0 {
		t.Errorf("second run changed something: %+v", st)
	}
	if count(t, db, `SELECT count(*) FROM paper_keys`) != keys || matchJobs(t, db) != jobs {
		t.Error("second run wrote keys or jobs")
	}
	// The second run starts at the newest datestamp seen, inclusive, and
	// never before the first run's start (the recorded datestamps are older
	// than the 48 h look-back of a first run).
	if q := srv.Queries(); !strings.Contains(q[2], "from=2015-01-04") {
		t.Errorf("second run started %q", q[2])
	}
}

func TestHarvestResumesWhereAFailedRunStopped(t *testing.T) {
	t.Parallel()
	failing := true
	srv := recordedOAI()
	srv.Fail = func(w http.ResponseWriter) bool {
		if failing {
			http.Error(w, "upstream broken", http.StatusInternalServerError)
		}
		return failing
	}
	h, db := newHarvester(t, srv)
	ctx := context.Background()
	st, err := h.RunOnce(ctx)
	if err == nil || st.Pages != 1 {
		t.Fatalf("want a failure after one page, got %+v %v", st, err)
	}
	var token, lastErr string
	db.Pool.QueryRow(ctx, `SELECT resumption_token, last_error FROM harvest_state`).Scan(&token, &lastErr)
	if token != "726959|1001" || lastErr == "" {
		t.Fatalf("state after failure: token %q error %q", token, lastErr)
	}
	failing = false
	st, err = h.RunOnce(ctx)
	if err != nil || st.Pages != 1 || st.New != 2 {
		t.Fatalf("resumed run: %+v %v", st, err)
	}
	q := srv.Queries()
	if last := q[len(q)-1]; !strings.Contains(last, "resumptionToken=") {
		t.Errorf("the retry did not resume with the token: %q", last)
	}
	if n := count(t, db, `SELECT count(*) FROM papers`); n != 8 {
		t.Errorf("%d papers after resuming, want 8", n)
	}
}

func TestHarvestRestartsOnAnExpiredToken(t *testing.T) {
	t.Parallel()
	srv := recordedOAI()
	srv.ExpireNextToken()
	h, db := newHarvester(t, srv)
	st, err := h.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// page 1, refused token, page 1 again (from the run's start), page 2.
	if q := srv.Queries(); len(q) != 4 || strings.Contains(q[2], "resumptionToken") {
		t.Errorf("requests %q", q)
	}
	if st.New != 8 || count(t, db, `SELECT count(*) FROM papers`) != 8 {
		t.Errorf("stats %+v", st)
	}
}

// openAlexServer answers /works lookups for one arXiv paper with the
// recorded work W2741809807, re-labelled as that paper's arXiv DOI.
func openAlexServer(t *testing.T, arxivID string) *httptest.Server {
	t.Helper()
	var work map[string]any
	if err := json.Unmarshal(mustRead("testdata/openalex/work-W2741809807.json"), &work); err != nil {
		t.Fatal(err)
	}
	fake := fakeopenalex.New(nil)
	fake.AddRecorded(arxivID, work)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	return ts
}

func TestEnrichmentAddsIdsAndRetriesTheUnknown(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	// Two harvested papers; OpenAlex knows only the first. The first one's
	// authors carry the names of the recorded work's first authorships.
	var work struct {
		Authorships []struct {
			Author struct {
				DisplayName string `json:"display_name"`
			} `json:"author"`
		} `json:"authorships"`
	}
	json.Unmarshal(mustRead("testdata/openalex/work-W2741809807.json"), &work)
	known := testPaper("2202.02326", func(p *paper.Paper) {
		p.Authors = nil
		for _, a := range work.Authorships {
			p.Authors = append(p.Authors, paper.Author{Name: a.Author.DisplayName})
		}
	})
	if _, err := in.Ingest(ctx, []paper.Paper{known, testPaper("2202.09999")}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	ts := openAlexServer(t, "2202.02326")
	client := openalex.NewClient(openalex.Config{BaseURL: ts.URL, MaxRetries: -1})
	now := time.Now()
	e := harvest.NewEnricher(in, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 2, Batch: 100}, nil,
		func() time.Time { return now })
	st, err := e.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Looked != 2 || st.Found != 1 || st.Missing != 1 || st.Keys == 0 {
		t.Fatalf("first pass: %+v", st)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys WHERE key LIKE 'researcher:openalex:A%' OR key LIKE 'researcher:orcid:%'`); n < len(work.Authorships) {
		t.Errorf("only %d researcher keys after enrichment", n)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys WHERE key LIKE 'institution:ror:%'`); n == 0 {
		t.Error("no institution keys after enrichment")
	}
	// Nothing is due now: the unknown paper waits an hour.
	st, _ = e.RunOnce(ctx)
	if st.Looked != 0 {
		t.Errorf("second pass looked up %d papers, want 0", st.Looked)
	}
	now = now.Add(2 * time.Hour)
	st, _ = e.RunOnce(ctx)
	if st.Looked != 1 || st.GivenUp != 1 {
		t.Errorf("third pass: %+v (want the unknown paper given up after 2 attempts)", st)
	}
	now = now.Add(100 * time.Hour)
	if st, _ := e.RunOnce(ctx); st.Looked != 0 {
		t.Errorf("a given-up paper was looked up again")
	}
}

// TestHarvestSurvivesChaoticUpstream: the OAI-PMH server answers with 500,
// 503 + Retry-After, a response slower than the client's timeout, a body
// cut in half, invalid XML and an expired resumption token, first in a
// scripted order that hits both pages, then at random (seeded). The client
// retries (waits recorded, not slept); runs that still fail are started
// again, as the periodic job does. The harvest ends with exactly the
// recorded records, each once, with no duplicate key rows, and later runs
// through the same faults add nothing.
func TestHarvestSurvivesChaoticUpstream(t *testing.T) {
	t.Parallel()
	script := []string{
		"500", "503", "slow", // first page: retried, then the run fails
		"truncated", "invalid", // two more failed runs
		"", "500", "truncated", // first page, then the second fails twice
		"expired token", // the resumed run's token expired: start again
	}
	rng := rand.New(rand.NewPCG(11, 29))
	var mu sync.Mutex
	requests := 0
	faults := map[string]int{}
	first := mustRead("testdata/oai/listrecords-arXivRaw-with-resumptiontoken.xml")
	second := mustRead("testdata/oai/listrecords-arXiv-complete-list.xml")
	expired := mustRead("testdata/oai/error-badResumptionToken.xml")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resumed := r.URL.Query().Get("resumptionToken") != ""
		mu.Lock()
		fault := ""
		if requests < len(script) {
			fault = script[requests]
		} else if x := rng.IntN(10); x < 4 {
			fault = []string{"500", "503", "truncated", "invalid"}[x]
		} else if x == 4 && resumed {
			fault = "expired token"
		}
		requests++
		faults[fault]++
		mu.Unlock()
		page := first
		if resumed {
			page = second
		}
		switch fault {
		case "500":
			http.Error(w, "internal error", http.StatusInternalServerError)
		case "503":
			w.Header().Set("Retry-After", "7")
			http.Error(w, "come back later", http.StatusServiceUnavailable)
		case "slow":
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		case "truncated":
			w.Write(page[:len(page)/2])
		case "invalid":
			w.Write([]byte("<OAI-PMH><ListRecords><record>&bogus;</record>"))
		case "expired token":
			if resumed {
				w.Write(expired)
			} else {
				w.Write(page)
			}
		default:
			w.Write(page)
		}
	}))
	t.Cleanup(ts.Close)
	in, db := newStore(t)
	var waits []time.Duration
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: 2,
		Client: &http.Client{Timeout: 300 * time.Millisecond},
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		}})
	now := func() time.Time { return time.Date(2015, 1, 6, 12, 0, 0, 0, time.UTC) }
	h := harvest.NewHarvester(db, client, in, []string{"cs"}, nil, now)

	ctx := context.Background()
	runs, failed, completed, added := 0, 0, 0, 0
	for ; runs < 60 && completed < 4; runs++ {
		st, err := h.RunOnce(ctx)
		if err != nil {
			failed++
			continue
		}
		if completed++; completed > 1 {
			added += st.New + st.Replaced
		}
	}
	t.Logf("%d runs (%d failed, %d completed), faults %v, %d client retries", runs, failed, completed, faults, len(waits))
	if completed < 4 {
		t.Fatalf("only %d of %d runs completed", completed, runs)
	}
	if n := count(t, db, `SELECT count(*) FROM papers`); n != 8 {
		t.Errorf("%d papers, want the 8 recorded", n)
	}
	if added != 0 {
		t.Errorf("runs after the first complete one added %d papers", added)
	}
	if n := count(t, db, `SELECT count(*) FROM (SELECT paper_id, key FROM paper_keys GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d duplicate key rows", n)
	}
	if failed < 4 || !slices.Contains(waits, 7*time.Second) {
		t.Errorf("faults not exercised: %d failed runs, waits %v", failed, waits)
	}
}

// malformedOAI returns 200 broken variants of the recorded arXivRaw page:
// truncations, mismatched tags, undefined and DTD-declared entities
// (billion laughs), invalid UTF-8, a huge broken attribute, wrong roots.
func malformedOAI() [][]byte {
	good := mustRead("testdata/oai/listrecords-arXivRaw-with-resumptiontoken.xml")
	titles := regexp.MustCompile(`<title>`).FindAllIndex(good, -1)
	insert := func(i int, s string) []byte {
		at := titles[i%len(titles)][1]
		return slices.Concat(good[:at], []byte(s), good[at:])
	}
	laughs := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>`
	var out [][]byte
	for i := range 200 {
		switch i % 8 {
		case 0: // cut short anywhere before the end
			out = append(out, good[:len(good)*(i/8+1)/27])
		case 1:
			out = append(out, insert(i, "</notopen>"))
		case 2:
			out = append(out, insert(i, "&bogus;"))
		case 3:
			out = append(out, insert(i, "caf\xff\xfe"))
		case 4: // entity expansion through a DTD
			body := bytes.Replace(good, []byte(`<?xml version="1.0" encoding="UTF-8"?>`), []byte(laughs), 1)
			out = append(out, bytes.Replace(body, []byte("<title>"), []byte("<title>&lol3;"), 1))
		case 5: // a 2 MiB attribute that ends in a bare "<"
			out = append(out, bytes.Replace(good, []byte("<OAI-PMH "), []byte(`<OAI-PMH x="`+strings.Repeat("a", 2<<20)+`<" `), 1))
		case 6:
			out = append(out, []byte(fmt.Sprintf(`<?xml version="1.0"?><html><body>upstream page %d</body></html>`, i)))
		case 7:
			out = append(out, insert(i, "<![CDATA[never closed"))
		}
	}
	return out
}

// TestTwoHundredMalformedOAIPagesNeverWrite: a harvest whose page is
// broken in any of 200 ways fails with an error and writes no paper and no
// key.
func TestTwoHundredMalformedOAIPagesNeverWrite(t *testing.T) {
	t.Log("hostile: malformed")
	t.Parallel()
	in, db := newStore(t)
	var mu sync.Mutex
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Write(body)
	}))
	defer ts.Close()
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	now := func() time.Time { return time.Date(2015, 1, 6, 12, 0, 0, 0, time.UTC) }
	h := harvest.NewHarvester(db, client, in, []string{"cs"}, nil, now)
	ctx := context.Background()
	for i, b := range malformedOAI() {
		mu.Lock()
		body = b
		mu.Unlock()
		if _, err := h.RunOnce(ctx); err == nil {
			t.Errorf("page %d (%.80q…) harvested without an error", i, b)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM papers`) + count(t, db, `SELECT count(*) FROM paper_keys`); n != 0 {
		t.Errorf("%d rows written from malformed pages", n)
	}
}

// TestHarvestStopsOnARepeatedResumptionToken: a repository that answers a
// resumption token with the same token would keep a harvest paging for
// ever; the run stops with an error after storing the page once.
func TestHarvestStopsOnARepeatedResumptionToken(t *testing.T) {
	t.Log("hostile: malformed")
	t.Parallel()
	page := mustRead("testdata/oai/listrecords-arXivRaw-with-resumptiontoken.xml")
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) > 10 {
			http.Error(w, "too many", http.StatusServiceUnavailable)
			return
		}
		w.Write(page)
	}))
	defer ts.Close()
	in, db := newStore(t)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	h := harvest.NewHarvester(db, client, in, []string{"cs"}, nil, func() time.Time { return time.Date(2015, 1, 6, 12, 0, 0, 0, time.UTC) })
	_, err := h.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "same token") {
		t.Fatalf("run: %v, want the repeated token named", err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (the first page, then the token once)", n)
	}
}
