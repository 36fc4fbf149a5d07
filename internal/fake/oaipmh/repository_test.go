package oaipmh_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
)

// The fake repository must speak OAI-PMH as the real harvester parses it:
// every record with its latest version, and a token chain to the end.
func TestFakeOAIPagesParseWithTheHarvester(t *testing.T) {
	recs := oaipmh.MakeRecords("2911", 0, 25, []string{"cs.LG", "stat.ML"}, "2026-11-29")
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	srv := httptest.NewServer(oai)
	defer srv.Close()
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: srv.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1})
	seen := map[string]int{}
	req := harvest.ListRequest{From: "2026-11-27", Set: "cs"}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the token chain does not end")
		}
		page, err := client.ListRecords(t.Context(), req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, p := range page.Papers {
			seen[p.ArxivID] = p.Version
			if len(p.Authors) < 2 || len(p.Categories) == 0 || p.Title == "" {
				t.Errorf("%s parsed incompletely: %+v", p.ArxivID, p)
			}
		}
		if page.ResumptionToken == "" {
			break
		}
		req = harvest.ListRequest{ResumptionToken: page.ResumptionToken}
	}
	if len(seen) != len(recs) {
		t.Fatalf("parsed %d records, want %d", len(seen), len(recs))
	}
	for _, r := range recs {
		if seen[r.ID] != r.Version {
			t.Errorf("%s: version %d, want %d", r.ID, seen[r.ID], r.Version)
		}
	}
	if got := oai.ServedPages(); got != 3 {
		t.Errorf("served %d pages, want 3", got)
	}
}

func TestFakeOAIFaults(t *testing.T) {
	recs := oaipmh.MakeRecords("2910", 0, 20, []string{"cs.LG"}, "2026-11-29")
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	oai.Plan(0, oaipmh.FaultTruncated, oaipmh.FaultInvalid)
	oai.Plan(1, oaipmh.FaultBadToken)
	srv := httptest.NewServer(oai)
	defer srv.Close()
	get := func(query string) []byte {
		resp, err := http.Get(srv.URL + "?verb=ListRecords&" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	for i, want := range []string{"unexpected EOF", "closed by", ""} {
		_, err := harvest.ParseListRecords(get("metadataPrefix=arXivRaw"), harvest.OAIFormatArXivRaw)
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("request %d: error %v, want %q", i+1, err, want)
		}
	}
	if _, err := harvest.ParseListRecords(get("resumptionToken=soak-p1-n20"), harvest.OAIFormatArXivRaw); err == nil ||
		!strings.Contains(err.Error(), "badResumptionToken") {
		t.Errorf("resumed page: error %v, want badResumptionToken", err)
	}
	if got := oai.FaultCounts(); got[oaipmh.FaultTruncated] != 1 || got[oaipmh.FaultInvalid] != 1 || got[oaipmh.FaultBadToken] != 1 {
		t.Errorf("fault counts %v", got)
	}
}

// ListIdentifiers pages through a day as the harvester's client reads it,
// with resumption tokens, and injects its planned faults in order.
func TestFakeOAIListIdentifiersPagesAndFaults(t *testing.T) {
	recs := oaipmh.MakeRecords("2911", 0, 12, []string{"cs.LG"}, "2026-11-29")
	recs = append(recs, oaipmh.MakeRecords("2911", 12, 3, []string{"cs.LG"}, "2026-11-30")...)
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, 5)
	oai.PlanIdentifiers(oaipmh.FaultTruncated, oaipmh.FaultBadToken)
	srv := httptest.NewServer(oai)
	defer srv.Close()
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: srv.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	first := harvest.ListRequest{From: "2026-11-29", Until: "2026-11-29", Set: "cs"}
	if _, err := client.ListIdentifiers(t.Context(), first); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("first request: %v, want the truncated body refused", err)
	}
	var ids []string
	req := first
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the token chain does not end")
		}
		page, err := client.ListIdentifiers(t.Context(), req)
		if pages == 1 {
			if err == nil || !strings.Contains(err.Error(), "badResumptionToken") {
				t.Fatalf("first resumed request: %v, want badResumptionToken", err)
			}
			page, err = client.ListIdentifiers(t.Context(), req)
		}
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		ids = append(ids, page.IDs...)
		if page.ResumptionToken == "" {
			break
		}
		req = harvest.ListRequest{ResumptionToken: page.ResumptionToken}
	}
	if len(ids) != 12 || ids[0] != "2911.00001" || ids[11] != "2911.00012" {
		t.Fatalf("listed %v, want the 12 records of the 29th", ids)
	}
	got := oai.FaultCounts()
	if got["ListIdentifiers: "+oaipmh.FaultTruncated] != 1 || got["ListIdentifiers: "+oaipmh.FaultBadToken] != 1 || oai.IdentifierLists() != 5 {
		t.Errorf("fault counts %v after %d requests", got, oai.IdentifierLists())
	}
}
