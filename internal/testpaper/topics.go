package testpaper

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"followfeed/paper"
)

// Topics are the words of a few subjects: a Writer's paper draws its
// title and abstract from one, so that a ranking model (package ranking)
// can learn to tell them apart.
var Topics = map[string][]string{
	"lensing": {"weak", "lensing", "shear", "cluster", "mass", "maps", "dark", "halo", "cosmic", "convergence"},
	"pulsar":  {"pulsar", "timing", "neutron", "star", "radio", "glitch", "magnetar", "spin", "millisecond", "binary"},
	"solar":   {"solar", "flare", "coronal", "loop", "sunspot", "magnetic", "chromosphere", "wind", "eruption", "prominence"},
	"dust":    {"interstellar", "dust", "grain", "extinction", "polarisation", "infrared", "emission", "molecular", "cloud", "ice"},
	"galaxy":  {"galaxy", "merger", "stellar", "population", "bulge", "disc", "kinematics", "redshift", "survey", "morphology"},
}

// generic are the words every topic's text has some of.
var generic = []string{"a", "study", "of", "new", "observations", "the", "on", "and", "model", "evidence"}

// Writer writes papers about Topics, the same papers for the same seed.
// Not safe for concurrent use.
type Writer struct {
	rng      *rand.Rand
	n        int
	prefix   string
	category string
}

// NewWriter returns a writer whose papers have arXiv ids prefix.00001,
// prefix.00002, … (prefix such as "2611") in category (also their only
// one).
func NewWriter(seed uint64, prefix, category string) *Writer {
	return &Writer{rng: rand.New(rand.NewPCG(seed, seed)), prefix: prefix, category: category}
}

// Paper is a new paper about topic (a key of Topics) by authors, two
// strangers when none: its title six words of the topic and two generic
// ones, its abstract forty and two, shuffled; submitted a minute after the
// writer's previous paper (from 2026-11-01).
func (w *Writer) Paper(topic string, authors ...paper.Author) paper.Paper {
	w.n++
	words := Topics[topic]
	draw := func(n int) string {
		var ws []string
		for range n {
			ws = append(ws, words[w.rng.IntN(len(words))])
		}
		ws = append(ws, generic[w.rng.IntN(len(generic))], generic[w.rng.IntN(len(generic))])
		w.rng.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
		return strings.Join(ws, " ")
	}
	if len(authors) == 0 {
		authors = []paper.Author{w.Stranger(), w.Stranger()}
	}
	return paper.Paper{ArxivID: fmt.Sprintf("%s.%05d", w.prefix, w.n), Version: 1, Title: draw(6), Abstract: draw(40),
		PrimaryCategory: w.category, Categories: []string{w.category}, Authors: slices.Clone(authors),
		SubmittedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(w.n) * time.Minute)}
}

// Background is n papers by strangers, the topics in turn (in the order
// of their names).
func (w *Writer) Background(n int) []paper.Paper {
	names := make([]string, 0, len(Topics))
	for k := range Topics {
		names = append(names, k)
	}
	slices.Sort(names)
	ps := make([]paper.Paper, 0, n)
	for i := range n {
		ps = append(ps, w.Paper(names[i%len(names)]))
	}
	return ps
}

// Stranger is an author without ids whom nobody follows.
func (w *Writer) Stranger() paper.Author {
	return paper.Author{Name: fmt.Sprintf("%c. Stranger%d", 'A'+rune(w.rng.IntN(26)), w.rng.IntN(100000))}
}

// PushJSON is p as one paper of a POST /v1/papers body (an NDJSON line),
// in the host site's shape.
func PushJSON(p paper.Paper) string {
	type author struct {
		Name string   `json:"name"`
		IDs  []string `json:"ids,omitempty"`
	}
	doc := struct {
		ArxivID         string   `json:"arxiv_id"`
		Title           string   `json:"title"`
		Abstract        string   `json:"abstract"`
		Authors         []author `json:"authors"`
		Categories      []string `json:"categories"`
		PrimaryCategory string   `json:"primary_category"`
		Published       string   `json:"published"`
	}{ArxivID: p.ArxivID, Title: p.Title, Abstract: p.Abstract, Categories: p.Categories,
		PrimaryCategory: p.PrimaryCategory, Published: p.SubmittedAt.UTC().Format(time.RFC3339)}
	for _, a := range p.Authors {
		doc.Authors = append(doc.Authors, author{Name: a.Name, IDs: a.IDs})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // not reached: strings and slices of strings
	}
	return string(b)
}

// CountIn is how many of ids are in set: how many of a ranking's first
// papers are about a topic, say.
func CountIn(ids, set []string) int {
	n := 0
	for _, id := range ids {
		if slices.Contains(set, id) {
			n++
		}
	}
	return n
}
