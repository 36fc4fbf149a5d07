package soak

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// OpenAlex fault kinds.
const (
	faultOA429     = "HTTP 429 with Retry-After: 1"
	faultOA500     = "HTTP 500"
	faultOAInvalid = "invalid JSON"
)

// oaWork is what the fake OpenAlex knows about one arXiv id.
type oaWork struct {
	Authors []oaAuthor
}

type oaAuthor struct {
	Name string
	ID   string // A5…
	Inst string // I…
}

// fakeOpenAlex answers /works?filter=doi:10.48550/arxiv.X|… with the works
// it knows (known, keyed by lowercased arXiv id) and injects faults[i] on
// its i-th request.
type fakeOpenAlex struct {
	known map[string]oaWork

	mu       sync.Mutex
	faults   []string
	requests int
	ok       int
	injected map[string]int
}

func newFakeOpenAlex(known map[string]oaWork, faults ...string) *fakeOpenAlex {
	if known == nil {
		known = map[string]oaWork{}
	}
	return &fakeOpenAlex{known: known, faults: faults, injected: map[string]int{}}
}

func (f *fakeOpenAlex) counts() (requests, ok int, injected map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	injected = map[string]int{}
	for k, v := range f.injected {
		injected[k] = v
	}
	return f.requests, f.ok, injected
}

// ServeHTTP answers /works?filter=doi:…|… with the known works, or the
// planned fault of the request.
func (f *fakeOpenAlex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/works" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.requests++
	fault := ""
	if f.requests <= len(f.faults) {
		fault = f.faults[f.requests-1]
	}
	if fault != "" {
		f.injected[fault]++
	} else {
		f.ok++
	}
	f.mu.Unlock()
	switch fault {
	case faultOA429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
		return
	case faultOA500:
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return
	case faultOAInvalid:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"meta": {"count": 3}, "results": [{"id": "https://openalex.org/W1", "doi": `))
		return
	}
	filter := strings.TrimPrefix(r.URL.Query().Get("filter"), "doi:")
	type author struct {
		ID          string  `json:"id"`
		DisplayName string  `json:"display_name"`
		ORCID       *string `json:"orcid"`
	}
	type inst struct {
		ID  string `json:"id"`
		ROR string `json:"ror"`
	}
	type authorship struct {
		Author        author `json:"author"`
		Institutions  []inst `json:"institutions"`
		RawAuthorName string `json:"raw_author_name"`
	}
	type work struct {
		ID          string       `json:"id"`
		DOI         string       `json:"doi"`
		Authorships []authorship `json:"authorships"`
	}
	results := []work{}
	for i, doi := range strings.Split(filter, "|") {
		id := strings.TrimPrefix(strings.ToLower(doi), "10.48550/arxiv.")
		k, ok := f.known[id]
		if !ok {
			continue
		}
		wk := work{ID: fmt.Sprintf("https://openalex.org/W%d", 4000000000+i), DOI: "https://doi.org/10.48550/arXiv." + id}
		for _, a := range k.Authors {
			as := authorship{Author: author{ID: "https://openalex.org/" + a.ID, DisplayName: a.Name}, RawAuthorName: a.Name}
			if a.Inst != "" {
				as.Institutions = []inst{{ID: "https://openalex.org/" + a.Inst}}
			}
			wk.Authorships = append(wk.Authorships, as)
		}
		results = append(results, wk)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"meta":    map[string]any{"count": len(results), "page": 1, "per_page": 100},
		"results": results,
	})
}
