// Package openalex is the fake OpenAlex /works endpoint of tests and the
// soak: it answers lookups by arXiv DOI with the works it knows (generated
// from author lists, or recorded JSON) and injects planned faults.
package openalex

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
)

// Faults a Server can inject; the values are their names in reports.
const (
	Fault429     = "HTTP 429 with Retry-After: 1"
	Fault500     = "HTTP 500"
	FaultInvalid = "invalid JSON"
)

// Work is what the fake knows about one arXiv id.
type Work struct {
	// ID is the work's OpenAlex URL; "" gives WorkURL of its arXiv id.
	ID      string
	Authors []Author
	// References are the works it cites, as OpenAlex URLs
	// ("https://openalex.org/W…"; WorkURL gives a known paper's).
	References []string
}

// WorkURL is the OpenAlex id the fake gives the work of a known arXiv id
// (lowercase): stable across requests, derived from the id.
func WorkURL(arxivID string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(arxivID)))
	return fmt.Sprintf("https://openalex.org/W4%09d", h.Sum32()%1_000_000_000)
}

// Author is one authorship of a Work.
type Author struct {
	Name string
	ID   string // A5…
	Inst string // I…
}

// Server answers /works?filter=doi:10.48550/arxiv.X|… with the works
// it knows (keyed by lowercased arXiv id) and injects faults[i] on its
// i-th request. It is an http.Handler.
type Server struct {
	known    map[string]Work
	recorded map[string]map[string]any
	// authors are the /authors/{id} answers; merged maps a merged
	// profile's id to its survivor's (answered with a redirect, as
	// OpenAlex does).
	authors map[string]AuthorProfile
	merged  map[string]string

	mu       sync.Mutex
	faults   []string
	requests int
	ok       int
	injected map[string]int
}

// New returns a fake knowing the works in known (nil: none) that injects
// faults on its first requests, one each, in order.
func New(known map[string]Work, faults ...string) *Server {
	if known == nil {
		known = map[string]Work{}
	}
	return &Server{known: known, recorded: map[string]map[string]any{}, faults: faults, injected: map[string]int{},
		authors: map[string]AuthorProfile{}, merged: map[string]string{}}
}

// AuthorProfile is what /authors/{ID} answers.
type AuthorProfile struct {
	ID    string // A…
	Name  string
	ORCID string // 0000-0001-6187-6610, or ""
}

// AddAuthor makes the fake answer /authors/{a.ID} with a, and each of
// mergedIDs (profiles OpenAlex merged into a) with a redirect to it. Call
// it before the fake serves.
func (f *Server) AddAuthor(a AuthorProfile, mergedIDs ...string) {
	f.authors[a.ID] = a
	for _, m := range mergedIDs {
		f.merged[m] = a.ID
	}
}

func (f *Server) serveAuthor(w http.ResponseWriter, r *http.Request, id string) {
	if to, ok := f.merged[id]; ok {
		u := *r.URL
		u.Path = "/authors/" + to
		http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
		return
	}
	a, ok := f.authors[id]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error": "not found"}`))
		return
	}
	var orcid any
	if a.ORCID != "" {
		orcid = "https://orcid.org/" + a.ORCID
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "https://openalex.org/" + a.ID, "display_name": a.Name, "orcid": orcid})
}

// AddRecorded makes the fake answer arXivID with a recorded work (OpenAlex's
// JSON, decoded), its doi re-labelled as arXivID's DOI. Call it before the
// fake serves.
func (f *Server) AddRecorded(arxivID string, work map[string]any) {
	work["doi"] = "https://doi.org/10.48550/arxiv." + arxivID
	f.recorded[strings.ToLower(arxivID)] = work
}

// Counts returns how many requests came, how many were answered without a
// fault, and how often each fault was injected.
func (f *Server) Counts() (requests, ok int, injected map[string]int) {
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
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/authors/"); ok {
		f.serveAuthor(w, r, id)
		return
	}
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
	case Fault429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
		return
	case Fault500:
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return
	case FaultInvalid:
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
		ID              string       `json:"id"`
		DOI             string       `json:"doi"`
		Authorships     []authorship `json:"authorships"`
		ReferencedWorks []string     `json:"referenced_works"`
	}
	results := []any{}
	for _, doi := range strings.Split(filter, "|") {
		id := strings.TrimPrefix(strings.ToLower(doi), "10.48550/arxiv.")
		if rec, ok := f.recorded[id]; ok {
			results = append(results, rec)
			continue
		}
		k, ok := f.known[id]
		if !ok {
			continue
		}
		wid := k.ID
		if wid == "" {
			wid = WorkURL(id)
		}
		wk := work{ID: wid, DOI: "https://doi.org/10.48550/arXiv." + id, ReferencedWorks: k.References}
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
