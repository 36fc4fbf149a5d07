package harvest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"followfeed/apperr"
	"followfeed/internal/fake/recorder"
)

var readTestdata = recorder.Testdata

func newTestOAIClient(baseURL string, sleep *recorder.Sleeps, cfg OAIConfig) *OAIClient {
	cfg.BaseURL = baseURL + "/oai"
	cfg.Sleep = sleep.Sleep
	if cfg.PageDelay == 0 {
		cfg.PageDelay = -1
	}
	return NewOAIClient(cfg)
}

func serveXML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func TestOAIListRecordsPaging(t *testing.T) {
	rawPage := readTestdata(t, "oai/listrecords-arXivRaw-with-resumptiontoken.xml")
	lastPage := readTestdata(t, "oai/listrecords-arXiv-complete-list.xml")
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Query().Get("resumptionToken") {
		case "":
			serveXML(w, 200, rawPage)
		case "726959|1001":
			// Recorded in the arXiv format while the run asks for arXivRaw:
			// the parser accepts either arXiv format.
			serveXML(w, 200, lastPage)
		default:
			serveXML(w, 200, readTestdata(t, "oai/error-badResumptionToken.xml"))
		}
	})
	sleep := &recorder.Sleeps{}
	c := newTestOAIClient(srv.URL, sleep, OAIConfig{Format: OAIFormatArXivRaw, PageDelay: 3 * time.Second})
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return fixed }

	var pages []*Page
	req := ListRequest{From: "2014-10-01", Until: "2014-10-02", Set: "physics:nucl-ex"}
	for {
		page, err := c.ListRecords(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
		if page.ResumptionToken == "" || len(pages) > 5 {
			break
		}
		req = ListRequest{From: "ignored", ResumptionToken: page.ResumptionToken}
	}
	if len(pages) != 2 || len(pages[0].Papers) != 6 || len(pages[1].Papers) != 2 {
		t.Fatalf("got %d pages", len(pages))
	}
	q := srv.Queries()
	want0 := url.Values{"verb": {"ListRecords"}, "metadataPrefix": {"arXivRaw"},
		"from": {"2014-10-01"}, "until": {"2014-10-02"}, "set": {"physics:nucl-ex"}}
	want1 := url.Values{"verb": {"ListRecords"}, "resumptionToken": {"726959|1001"}}
	if !reflect.DeepEqual(q[0], want0) || !reflect.DeepEqual(q[1], want1) {
		t.Errorf("queries = %v, want %v then %v", q, want0, want1)
	}
	if got := sleep.Waits(); !slices.Equal(got, []time.Duration{3 * time.Second}) {
		t.Errorf("waits = %v, want one PageDelay of 3s between the pages", got)
	}
}

// replayNock returns the exchanges of a nock recording: status, headers
// (minus hop-by-hop and length ones) and body.
type nockExchange struct {
	Status     int      `json:"status"`
	Response   string   `json:"response"`
	RawHeaders []string `json:"rawHeaders"`
}

func TestOAIListRecordsRetriesRecorded503(t *testing.T) {
	var exchanges []nockExchange
	if err := json.Unmarshal(readTestdata(t, "oai/listrecords-arXiv-503-then-200.nock.json"), &exchanges); err != nil {
		t.Fatal(err)
	}
	if len(exchanges) != 2 || exchanges[0].Status != 503 {
		t.Fatalf("unexpected recording: %+v", exchanges)
	}
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		ex := exchanges[min(n, len(exchanges))-1]
		for i := 0; i+1 < len(ex.RawHeaders); i += 2 {
			switch strings.ToLower(ex.RawHeaders[i]) {
			case "content-length", "connection", "transfer-encoding":
			default:
				w.Header().Add(ex.RawHeaders[i], ex.RawHeaders[i+1])
			}
		}
		w.WriteHeader(ex.Status)
		_, _ = w.Write([]byte(ex.Response))
	})
	sleep := &recorder.Sleeps{}
	c := newTestOAIClient(srv.URL, sleep, OAIConfig{})
	page, err := c.ListRecords(context.Background(), ListRequest{From: "2015-01-01", Until: "2015-01-03"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Papers) != 2 || page.Papers[0].ArxivID != "1412.8544" {
		t.Errorf("papers = %+v", page.Papers)
	}
	if n := srv.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if got := sleep.Waits(); !slices.Equal(got, []time.Duration{10 * time.Second}) {
		t.Errorf("waits = %v, want [10s] from Retry-After", got)
	}
}

func TestOAIListRecordsRetryPolicy(t *testing.T) {
	ok := readTestdata(t, "oai/listrecords-arXiv-complete-list.xml")
	cases := []struct {
		name      string
		cfg       OAIConfig
		handler   func(w http.ResponseWriter, r *http.Request, n int)
		wantErr   error // nil: success
		wantReqs  int32
		wantWaits []time.Duration
	}{{
		name: "503 forever gives up after MaxRetries with exponential back-off",
		cfg:  OAIConfig{MaxRetries: 3},
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(503)
		},
		wantErr:   ErrUpstream,
		wantReqs:  4,
		wantWaits: []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second},
	}, {
		name: "default MaxRetries is 5; back-off capped by MaxRetryAfter",
		cfg:  OAIConfig{MaxRetryAfter: 30 * time.Second},
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(502)
		},
		wantErr:   ErrUpstream,
		wantReqs:  6,
		wantWaits: []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second},
	}, {
		name: "429 is retried like 503; huge Retry-After is capped",
		cfg:  OAIConfig{MaxRetryAfter: time.Minute},
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(429)
				return
			}
			serveXML(w, 200, ok)
		},
		wantReqs:  2,
		wantWaits: []time.Duration{time.Minute},
	}, {
		name: "Retry-After as HTTP-date is relative to the Date header",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Date", "Thu, 21 Jun 2018 14:30:51 GMT")
				w.Header().Set("Retry-After", "Thu, 21 Jun 2018 14:31:21 GMT")
				w.WriteHeader(503)
				return
			}
			serveXML(w, 200, ok)
		},
		wantReqs:  2,
		wantWaits: []time.Duration{30 * time.Second},
	}, {
		name: "network error is retried",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			serveXML(w, 200, ok)
		},
		wantReqs:  2,
		wantWaits: []time.Duration{5 * time.Second},
	}, {
		name: "404 is not retried",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			http.NotFound(w, r)
		},
		wantErr:  ErrUpstream,
		wantReqs: 1,
	}, {
		name: "truncated 200 is malformed and not retried",
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			serveXML(w, 200, ok[:len(ok)/2])
		},
		wantErr:  ErrMalformed,
		wantReqs: 1,
	}, {
		name: "negative MaxRetries disables retries",
		cfg:  OAIConfig{MaxRetries: -1},
		handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(500)
		},
		wantErr:  ErrUpstream,
		wantReqs: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := recorder.NewServer(t, tc.handler)
			sleep := &recorder.Sleeps{}
			c := newTestOAIClient(srv.URL, sleep, tc.cfg)
			page, err := c.ListRecords(context.Background(), ListRequest{})
			if tc.wantErr == nil {
				if err != nil || len(page.Papers) != 2 {
					t.Errorf("got %v, %v; want the page", page, err)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if n := srv.Requests(); n != tc.wantReqs {
				t.Errorf("%d requests, want %d", n, tc.wantReqs)
			}
			if got := sleep.Waits(); !slices.Equal(got, tc.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tc.wantWaits)
			}
		})
	}
}

func TestOAIListRecordsOAIErrors(t *testing.T) {
	cases := []struct {
		file   string
		status int
		check  func(t *testing.T, page *Page, err error)
	}{
		{"oai/error-noRecordsMatch.xml", 200, func(t *testing.T, page *Page, err error) {
			if err != nil || page == nil || len(page.Papers) != 0 || page.ResumptionToken != "" {
				t.Errorf("got %+v, %v; want an empty page", page, err)
			}
		}},
		{"oai/error-noRecordsMatch.xml", 404, func(t *testing.T, page *Page, err error) {
			if err != nil || page == nil || len(page.Papers) != 0 {
				t.Errorf("noRecordsMatch served as 404: got %+v, %v; want an empty page", page, err)
			}
		}},
		{"oai/error-badResumptionToken.xml", 200, func(t *testing.T, page *Page, err error) {
			if !errors.Is(err, ErrBadResumptionToken) {
				t.Errorf("err = %v, want ErrBadResumptionToken", err)
			}
		}},
		{"oai/error-idDoesNotExist.xml", 400, func(t *testing.T, page *Page, err error) {
			var oe *OAIError
			if !errors.As(err, &oe) || oe.Code != "idDoesNotExist" || errors.Is(err, ErrUpstream) {
				t.Errorf("err = %v, want *OAIError idDoesNotExist", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.file, tc.status), func(t *testing.T) {
			body := readTestdata(t, tc.file)
			srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) { serveXML(w, tc.status, body) })
			c := newTestOAIClient(srv.URL, &recorder.Sleeps{}, OAIConfig{})
			page, err := c.ListRecords(context.Background(), ListRequest{ResumptionToken: "3"})
			tc.check(t, page, err)
			if n := srv.Requests(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestOAIListRecordsInvalidRequest(t *testing.T) {
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(500) })
	for name, tc := range map[string]struct {
		cfg OAIConfig
		req ListRequest
	}{
		"bad from":        {OAIConfig{}, ListRequest{From: "2024-13-01"}},
		"bad until":       {OAIConfig{}, ListRequest{Until: "yesterday"}},
		"until < from":    {OAIConfig{}, ListRequest{From: "2024-02-01", Until: "2024-01-01"}},
		"bad set":         {OAIConfig{}, ListRequest{Set: "cs&verb=Identify"}},
		"unknown format":  {OAIConfig{Format: "oai_dc"}, ListRequest{}},
		"token w/ format": {OAIConfig{Format: "oai_dc"}, ListRequest{ResumptionToken: "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newTestOAIClient(srv.URL, &recorder.Sleeps{}, tc.cfg)
			_, err := c.ListRecords(context.Background(), tc.req)
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Errorf("err = %v, want apperr.Invalid", err)
			}
		})
	}
	c := NewOAIClient(OAIConfig{BaseURL: "ftp://example.invalid/oai"})
	if _, err := c.ListRecords(context.Background(), ListRequest{}); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("ftp BaseURL: err = %v, want apperr.Invalid", err)
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("%d requests made for invalid input", n)
	}
}

func TestOAIListRecordsContextAndBodyCap(t *testing.T) {
	t.Log("hostile: limits")
	srv := recorder.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("resumptionToken") == "big" {
			serveXML(w, 200, bytes.Repeat([]byte(" "), 2048))
			return
		}
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(503)
	})

	ctx, cancel := context.WithCancel(context.Background())
	c := NewOAIClient(OAIConfig{BaseURL: srv.URL, PageDelay: -1, Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}})
	if _, err := c.ListRecords(ctx, ListRequest{}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUpstream) {
		t.Errorf("cancelled while waiting: err = %v, want context.Canceled", err)
	}

	c = newTestOAIClient(srv.URL, &recorder.Sleeps{}, OAIConfig{})
	c.get.MaxBody = 1024
	if _, err := c.ListRecords(context.Background(), ListRequest{ResumptionToken: "big"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("oversized body: err = %v, want ErrMalformed", err)
	}
}

func TestOAIDefaults(t *testing.T) {
	c := NewOAIClient(OAIConfig{})
	if c.baseURL != "https://oaipmh.arxiv.org/oai" || c.format != OAIFormatArXiv || c.pageDelay != 3*time.Second ||
		c.get.MaxRetries != 5 || c.get.MaxWait != 5*time.Minute || c.get.Client == nil || c.get.Sleep == nil {
		t.Errorf("defaults: %+v %+v", c, c.get)
	}
}
