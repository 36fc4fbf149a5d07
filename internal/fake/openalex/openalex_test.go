package openalex_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/openalex"
)

func TestFakeOpenAlexParsesWithTheClient(t *testing.T) {
	known := map[string]fakeopenalex.Work{"2910.00001": {Authors: []fakeopenalex.Author{{Name: "Ada Soak0", ID: "A590000001", Inst: "I7000001"}}}}
	srv := httptest.NewServer(fakeopenalex.New(known, fakeopenalex.Fault500))
	defer srv.Close()
	slept := 0
	client := openalex.NewClient(openalex.Config{BaseURL: srv.URL,
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
