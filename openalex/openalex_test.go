package openalex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"followfeed/internal/fake/recorder"
	"followfeed/internal/httpclient"
	"followfeed/internal/upstream"
)

var readTestdata = recorder.Testdata

// recordedWorkAsArxivList wraps the recorded work W2741809807 in a /works
// list envelope. The work is a PeerJ article (DOI 10.7717/peerj.4375); its
// doi is rewritten here to the arXiv DOI of 1706.03762, in OpenAlex's
// "https://doi.org/…" form with arXiv's mixed case, to exercise the mapping
// back to an arXiv id. No recorded OpenAlex work of an arXiv preprint exists.
func recordedWorkAsArxivList(t testing.TB) []byte {
	t.Helper()
	var work map[string]any
	if err := json.Unmarshal(readTestdata(t, "openalex/work-W2741809807.json"), &work); err != nil {
		t.Fatal(err)
	}
	work["doi"] = "https://doi.org/10.48550/arXiv.1706.03762"
	body, err := json.Marshal(map[string]any{
		"meta":     map[string]any{"count": 1, "db_response_time_ms": 12, "page": 1, "per_page": 100, "groups_count": nil},
		"results":  []any{work},
		"group_by": []any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

var recordedWorkEnrichment = Enrichment{
	Authors: []WorkAuthor{
		{Name: "Heather Piwowar", IDs: []string{"openalex:A5048491430", "orcid:0000-0003-1613-5981"}},
		{Name: "Jason Priem", IDs: []string{"openalex:A5023888391", "orcid:0000-0001-6187-6610"}},
		{Name: "Vincent Larivière", IDs: []string{"openalex:A5068542997", "orcid:0000-0002-2733-0689"}},
		{Name: "Juan Pablo Alperín", IDs: []string{"openalex:A5085171399", "orcid:0000-0002-9344-7439"}},
		{Name: "Lisa Matthias", IDs: []string{"openalex:A5066880338", "orcid:0000-0002-2612-2132"}},
		{Name: "Bree Norlander", IDs: []string{"openalex:A5015414792", "orcid:0000-0002-0431-4221"}},
		{Name: "Ashley Farley", IDs: []string{"openalex:A5062989025", "orcid:0000-0001-9310-6944"}},
		{Name: "Jevin D. West", IDs: []string{"openalex:A5046879461", "orcid:0000-0002-4118-0322"}},
		{Name: "Stefanie Haustein", IDs: []string{"openalex:A5014077037", "orcid:0000-0003-0157-1430"}},
	},
	Institutions: []string{
		"ror:05ppvf150", "openalex:I4210166736", "ror:0161xgx34", "openalex:I70931966",
		"ror:002rjbv21", "openalex:I159129438", "ror:0213rcc28", "openalex:I18014758",
		"ror:05ek4tb53", "openalex:I4387153203", "ror:00cvxb145", "openalex:I201448701",
		"ror:02jqc0m91", "openalex:I58610484", "ror:03c4mmv16", "openalex:I153718931",
	},
	// Each institution once, its ROR and OpenAlex ids together, with
	// OpenAlex's name and country (null for Public Knowledge Project).
	InstitutionRecords: []Institution{
		{IDs: []string{"ror:05ppvf150", "openalex:I4210166736"}, Name: "Impact Technology Development (United States)", Country: "US"},
		{IDs: []string{"ror:0161xgx34", "openalex:I70931966"}, Name: "Université de Montréal", Country: "CA"},
		{IDs: []string{"ror:002rjbv21", "openalex:I159129438"}, Name: "Université du Québec à Montréal", Country: "CA"},
		{IDs: []string{"ror:0213rcc28", "openalex:I18014758"}, Name: "Simon Fraser University", Country: "CA"},
		{IDs: []string{"ror:05ek4tb53", "openalex:I4387153203"}, Name: "Public Knowledge Project"},
		{IDs: []string{"ror:00cvxb145", "openalex:I201448701"}, Name: "University of Washington", Country: "US"},
		{IDs: []string{"ror:02jqc0m91", "openalex:I58610484"}, Name: "Seattle University", Country: "US"},
		{IDs: []string{"ror:03c4mmv16", "openalex:I153718931"}, Name: "University of Ottawa", Country: "CA"},
	},
	WorkID: "W2741809807",
	// The recorded referenced_works, in order.
	References: []string{
		"W1560783210", "W1724212071", "W1767272795", "W1917633107", "W1931854307", "W1944943415", "W1957687230", "W1989318653",
		"W2003844967", "W2016860460", "W2020807482", "W2029057325", "W2031754690", "W2048185449", "W2078310052", "W2089123513",
		"W2115339903", "W2140880926", "W2160597895", "W2231201268", "W2299516731", "W2306268324", "W2322381034", "W2343014812",
		"W2345375849", "W2463568293", "W2511661767", "W2511663072", "W2520991028", "W2563251083", "W2566143661", "W2587705861",
		"W2588027260", "W2611818942", "W2737712680", "W2753353163", "W2762597540", "W2785823074", "W2953072907", "W2997143876",
		"W3012252063", "W3121567788", "W4254015553", "W4298108315", "W4301734034",
	},
}

func TestParseWorksRecordedWork(t *testing.T) {
	got, err := ParseWorks(recordedWorkAsArxivList(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Enrichment{"10.48550/arxiv.1706.03762": recordedWorkEnrichment}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseWorks:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseWorksRecordedSearchPage(t *testing.T) {
	got, err := ParseWorks(readTestdata(t, "openalex/works-search-attention-mechanism-page1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dois []string
	for doi, e := range got {
		dois = append(dois, doi)
		if len(e.Authors) == 0 {
			t.Errorf("%s: no authors", doi)
		}
		if _, ok := openAlexArxivIDFromDOI(doi); ok {
			t.Errorf("%s taken for an arXiv DOI", doi)
		}
	}
	slices.Sort(dois)
	want := []string{"10.1007/s41095-022-0271-y", "10.1016/0042-6989(95)00294-4", "10.1016/j.neucom.2021.03.091"}
	if !slices.Equal(dois, want) {
		t.Errorf("dois = %v, want %v", dois, want)
	}
	// An author with "orcid": null gets no orcid id, and keeps the OpenAlex one.
	first := got["10.1016/j.neucom.2021.03.091"].Authors[0]
	if first.Name != "Zhaoyang Niu" || !slices.Equal(first.IDs, []string{"openalex:A5088298875"}) {
		t.Errorf("first author = %+v", first)
	}
}

func TestParseWorksMalformed(t *testing.T) {
	full := recordedWorkAsArxivList(t)
	for name, body := range map[string]string{
		"truncated":       string(full[:len(full)/2]),
		"empty":           "",
		"html":            "<html>Too Many Requests</html>",
		"no results":      `{"meta":{"count":0}}`,
		"results object":  `{"results":{"doi":"x"}}`,
		"doi number":      `{"results":[{"doi":5}]}`,
		"trailing data":   `{"results":[]} {}`,
		"error envelope":  `{"error":"Invalid query parameters error.","message":"filter is not valid"}`,
		"deeply nested":   `{"results":[` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `]}`,
		"authorships str": `{"results":[{"doi":"10.48550/arxiv.1","authorships":"x"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseWorks([]byte(body)); !errors.Is(err, ErrMalformed) || got != nil {
				t.Errorf("got %v, %v; want ErrMalformed", got, err)
			}
		})
	}
	if _, err := ParseWorks(make([]byte, MaxBodyBytes+1)); !errors.Is(err, ErrMalformed) {
		t.Errorf("oversized: err = %v", err)
	}
}

func TestParseWorksEdgeCases(t *testing.T) {
	body := `{"results":[
 {"doi":null,"authorships":[{"author":{"display_name":"No DOI"}}]},
 {"doi":"https://doi.org/10.48550/arXiv.2101.00001","authorships":[
   {"author":null,"raw_author_name":"  Raw\nName ","institutions":null},
   {"author":{"id":"https://openalex.org/A1","display_name":"","orcid":"https://orcid.org/0000-0002-1694-233x"},"institutions":[
     {"id":"https://openalex.org/I9","ror":"https://ror.org/03DBR7087"},
     {"id":"https://openalex.org/W9","ror":"not a ror"},
     {"id":"https://openalex.org/I9","ror":"https://ror.org/03dbr7087"}]},
   {"author":{"id":"https://openalex.org/I5","display_name":"Wrong Kind","orcid":"0000-0002"}},
   {"author":{}}]},
 {"doi":"10.48550/ARXIV.2101.00001","authorships":[]}
]}`
	got, err := ParseWorks([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Enrichment{"10.48550/arxiv.2101.00001": {
		Authors: []WorkAuthor{
			{Name: "Raw Name"},
			{Name: "", IDs: []string{"openalex:A1", "orcid:0000-0002-1694-233X"}},
			{Name: "Wrong Kind"},
		},
		Institutions: []string{"ror:03dbr7087", "openalex:I9"},
		// The repeated institution once; the W id and bad ROR give none.
		InstitutionRecords: []Institution{{IDs: []string{"ror:03dbr7087", "openalex:I9"}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestOpenAlexArxivIDFromDOI(t *testing.T) {
	cases := map[string]string{
		"https://doi.org/10.48550/arxiv.2202.02326": "2202.02326",
		"https://doi.org/10.48550/arXiv.2202.02326": "2202.02326",
		"10.48550/ARXIV.2202.02326":                 "2202.02326",
		"10.48550/arxiv.hep-th/9504118":             "hep-th/9504118",
		"doi:10.48550/arxiv.math.GT/0309136":        "math.gt/0309136",
		"https://doi.org/10.7717/peerj.4375":        "",
		"10.48550/arxiv.":                           "",
		"10.48550/arxiv.a|b":                        "",
		"":                                          "",
	}
	for in, want := range cases {
		got, ok := openAlexArxivIDFromDOI(in)
		if got != want || ok != (want != "") {
			t.Errorf("openAlexArxivIDFromDOI(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// openAlexTestServer answers /works?filter=doi:a|b|… with one work per DOI
// it is given, except DOIs whose id ends in "7" (unknown to OpenAlex). It
// fails the test on a request that breaks the documented query shape.
func openAlexTestServer(t *testing.T) *recorder.Server {
	return recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		if r.URL.Path != "/works" || q.Get("select") != "id,doi,authorships,referenced_works" || q.Get("per-page") != "100" ||
			q.Get("mailto") != "ops@example.org" || q.Get("api_key") != "k3y" {
			t.Errorf("bad request %s", r.URL)
		}
		filter, ok := strings.CutPrefix(q.Get("filter"), "doi:")
		dois := strings.Split(filter, "|")
		if !ok || len(dois) == 0 || len(dois) > BatchSize {
			t.Errorf("bad filter %q (%d DOIs)", q.Get("filter"), len(dois))
		}
		var results []any
		for i, doi := range dois {
			if doi != strings.ToLower(doi) || !strings.HasPrefix(doi, "10.48550/arxiv.") {
				t.Errorf("DOI %q not a lowercase arXiv DOI", doi)
			}
			if strings.HasSuffix(doi, "7") {
				continue
			}
			results = append(results, map[string]any{
				"id":  fmt.Sprintf("https://openalex.org/W%d", 1000*n+i),
				"doi": "https://doi.org/" + strings.Replace(doi, "arxiv", "arXiv", 1),
				"authorships": []any{map[string]any{
					"author": map[string]any{"id": fmt.Sprintf("https://openalex.org/A%d", 1000*n+i), "display_name": "Author of " + doi, "orcid": nil},
				}},
			})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"meta": map[string]any{"count": len(results)}, "results": results})
	})
}

func TestOpenAlexLookupArxivBatching(t *testing.T) {
	srv := openAlexTestServer(t)
	sleep := &recorder.Sleeps{}
	c := NewClient(Config{BaseURL: srv.URL + "/", Mailto: "ops@example.org", APIKey: "k3y", Sleep: sleep.Sleep})

	var ids []string
	for i := range 118 {
		ids = append(ids, fmt.Sprintf("2101.%05d", i))
	}
	ids = append(ids, "2101.00003v2", "hep-th/9504118v1", "math.GT/0309136", "not an id", "")
	got, err := c.LookupArxiv(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests(); n != 3 {
		t.Errorf("%d requests, want 3 (120 distinct ids, ≤50 per request)", n)
	}
	total := 0
	for _, q := range srv.Queries() {
		total += len(strings.Split(strings.TrimPrefix(q["filter"][0], "doi:"), "|"))
	}
	if total != 120 {
		t.Errorf("%d DOIs requested in all, want 120", total)
	}
	for _, id := range append(ids[:118:118], "hep-th/9504118", "math.GT/0309136") {
		e, found := got[id]
		if strings.HasSuffix(id, "7") {
			if found {
				t.Errorf("%s: unknown to OpenAlex but present", id)
			}
			continue
		}
		if !found || len(e.Authors) != 1 || !strings.HasPrefix(e.Authors[0].IDs[0], "openalex:A") {
			t.Errorf("%s: got %+v, %v", id, e, found)
		}
	}
	// 120 distinct ids, of which 2101.00007, …00017, …, …00117 (12) are unknown.
	if len(got) != 108 {
		t.Errorf("got %d results, want 108", len(got))
	}
	if _, ok := got["2101.00003v2"]; ok {
		t.Error("result keyed by a versioned id")
	}
	if len(sleep.Waits()) != 0 {
		t.Errorf("waits %v without errors", sleep.Waits())
	}
}

func TestOpenAlexLookupArxivRecorded(t *testing.T) {
	arxivList := recordedWorkAsArxivList(t)
	searchPage := readTestdata(t, "openalex/works-search-attention-mechanism-page1.json")
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.Contains(r.URL.Query().Get("filter"), "1706.03762") {
			_, _ = w.Write(arxivList)
			return
		}
		_, _ = w.Write(searchPage)
	})
	c := NewClient(Config{BaseURL: srv.URL, Sleep: (&recorder.Sleeps{}).Sleep})
	got, err := c.LookupArxiv(context.Background(), []string{"arXiv:1706.03762v7"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]Enrichment{"1706.03762": recordedWorkEnrichment}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	// A page of works with non-arXiv DOIs yields nothing, without error.
	got, err = c.LookupArxiv(context.Background(), []string{"2111.07624"})
	if err != nil || len(got) != 0 {
		t.Errorf("search page: got %v, %v; want empty", got, err)
	}
	if q := srv.Queries()[0]; q.Get("mailto") != "" || q.Has("api_key") {
		t.Errorf("empty Mailto/APIKey sent: %v", q)
	}
}

func TestOpenAlexLookupArxivRetries(t *testing.T) {
	okBody := recordedWorkAsArxivList(t)
	cases := []struct {
		name      string
		cfg       Config
		handler   func(w http.ResponseWriter, r *http.Request, n int)
		wantErr   error
		wantReqs  int32
		wantWaits []time.Duration
	}{{
		name: "429 with Retry-After then 200",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(429)
				_, _ = w.Write([]byte(`{"error":"Rate limit exceeded"}`))
				return
			}
			_, _ = w.Write(okBody)
		},
		wantReqs:  2,
		wantWaits: []time.Duration{7 * time.Second},
	}, {
		name: "500s exhaust the default 4 retries",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(500)
		},
		wantErr:   ErrUpstream,
		wantReqs:  5,
		wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
	}, {
		name: "MaxRetries 1",
		cfg:  Config{MaxRetries: 1},
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(503)
		},
		wantErr:   ErrUpstream,
		wantReqs:  2,
		wantWaits: []time.Duration{time.Second},
	}, {
		name: "truncated JSON is malformed, not retried",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			_, _ = w.Write(okBody[:len(okBody)/3])
		},
		wantErr:  ErrMalformed,
		wantReqs: 1,
	}, {
		name: "400 is not retried",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"Invalid query parameters error.","message":"doi is not a valid filter"}`))
		},
		wantErr:  ErrUpstream,
		wantReqs: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := recorder.NewServer(t, tc.handler)
			sleep := &recorder.Sleeps{}
			tc.cfg.BaseURL = srv.URL
			tc.cfg.Sleep = sleep.Sleep
			got, err := NewClient(tc.cfg).LookupArxiv(context.Background(), []string{"1706.03762"})
			if tc.wantErr == nil {
				if err != nil || len(got["1706.03762"].Authors) != 9 {
					t.Errorf("got %v, %v", got, err)
				}
			} else if !errors.Is(err, tc.wantErr) || got != nil {
				t.Errorf("got %v, err %v; want %v", got, err, tc.wantErr)
			}
			if n := srv.Requests(); n != tc.wantReqs {
				t.Errorf("%d requests, want %d", n, tc.wantReqs)
			}
			if w := sleep.Waits(); !slices.Equal(w, tc.wantWaits) {
				t.Errorf("waits %v, want %v", w, tc.wantWaits)
			}
		})
	}
}

func TestOpenAlexLookupArxivNoRequestAndRedaction(t *testing.T) {
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {})
	c := NewClient(Config{BaseURL: srv.URL})
	got, err := c.LookupArxiv(context.Background(), []string{"", "  ", "x y"})
	if err != nil || len(got) != 0 || srv.Requests() != 0 {
		t.Errorf("no valid ids: got %v, %v after %d requests", got, err, srv.Requests())
	}

	// A network error must not leak the API key through *url.Error's URL.
	srv.Close()
	c = NewClient(Config{BaseURL: srv.URL, APIKey: "s3cret-key", MaxRetries: -1})
	_, err = c.LookupArxiv(context.Background(), []string{"2101.00001"})
	if !errors.Is(err, ErrUpstream) || strings.Contains(err.Error(), "s3cret-key") {
		t.Errorf("err = %v; want ErrUpstream without the key", err)
	}
}

// FuzzParseWorks checks that no input makes ParseWorks panic and that what
// it returns is keyed by DOIs and holds only well-formed ids.
// Seeds: testdata/fuzz/FuzzParseWorks.
func FuzzParseWorks(f *testing.F) {
	f.Log("hostile: decoders")
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := ParseWorks(body)
		if err != nil {
			if got != nil {
				t.Fatal("result and error both returned")
			}
			return
		}
		for doi, e := range got {
			if !strings.HasPrefix(doi, "10.") || doi != strings.ToLower(doi) {
				t.Fatalf("bad key %q", doi)
			}
			if len(e.Authors) > upstream.MaxAuthors {
				t.Fatalf("%d authors", len(e.Authors))
			}
			for _, a := range e.Authors {
				if !utf8.ValidString(a.Name) || utf8.RuneCountInString(a.Name) > upstream.MaxNameRunes {
					t.Fatalf("bad name %q", a.Name)
				}
				for _, id := range a.IDs {
					if !strings.HasPrefix(id, "openalex:A") && !strings.HasPrefix(id, "orcid:") {
						t.Fatalf("bad author id %q", id)
					}
				}
			}
			seen := map[string]bool{}
			for _, inst := range e.Institutions {
				if seen[inst] || (!strings.HasPrefix(inst, "ror:") && !strings.HasPrefix(inst, "openalex:I")) {
					t.Fatalf("bad or duplicate institution %q", inst)
				}
				seen[inst] = true
			}
		}
	})
}

// A /works response small on the wire that inflates past MaxBodyBytes
// (a gzip bomb, decoded by the transport) is a permanent failure of that
// request: one request, no back-off wait, an error matching ErrMalformed
// and ErrTooLarge, not ErrUpstream. The production client is used
// (httpclient.New with the OpenAlex cap, retries at their default).
func TestLookupArxivResponseInflatingPastTheCapIsNotRetried(t *testing.T) {
	t.Log("hostile: limits")
	bomb := recorder.GzipBomb(t, []byte(`{"meta": {"count": 1}, "results": [`), MaxBodyBytes+(1<<20))
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed; the test wants a small one", len(bomb))
	}
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		recorder.ServeGzip(w, "application/json", bomb)
	})
	var sleeps recorder.Sleeps
	c := NewClient(Config{BaseURL: srv.URL, Client: httpclient.New(time.Minute, MaxBodyBytes), Sleep: sleeps.Sleep})
	_, err := c.LookupArxiv(t.Context(), []string{"2202.02326"})
	if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v, want ErrMalformed and ErrTooLarge, not ErrUpstream", err)
	}
	if srv.Requests() != 1 || len(sleeps.Waits()) != 0 {
		t.Fatalf("%d requests and waits %v, want 1 and none", srv.Requests(), sleeps.Waits())
	}
}
