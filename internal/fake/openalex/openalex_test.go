package openalex_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"followfeed/harvest"
	"followfeed/internal/fake/openalex"
)

func TestFakeOpenAlexParsesWithTheClient(t *testing.T) {
	known := map[string]openalex.Work{"2910.00001": {Authors: []openalex.Author{{Name: "Ada Soak0", ID: "A590000001", Inst: "I7000001"}}}}
	srv := httptest.NewServer(openalex.New(known, openalex.Fault500))
	defer srv.Close()
	slept := 0
	client := harvest.NewOpenAlexClient(harvest.OpenAlexConfig{BaseURL: srv.URL,
		Sleep: func(context.Context, time.Duration) error { slept++; return nil }})
	got, err := client.LookupArxiv(t.Context(), []string{"2910.00001", "2910.00002"})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := got["2910.00001"]
	if !ok || len(got) != 1 || len(e.Authors) != 1 || e.Authors[0].IDs[0] != "openalex:A590000001" || e.Institutions[0] != "openalex:I7000001" {
		t.Fatalf("lookup = %+v", got)
	}
	if slept != 1 {
		t.Errorf("the injected 500 caused %d retries, want 1", slept)
	}
}
