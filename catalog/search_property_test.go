package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/paper"
)

// TestSearchKeysAtIngestEqualMatch is the query property through the
// database: a few hundred random searches over the fixtures' own words
// (titles, abstracts and authors of recorded arXiv and OpenAlex responses,
// copied from search/testdata) are followed, the fixtures are ingested, and
// the query: key rows each stored paper got are exactly the searches whose
// Query.Match on that stored paper's text is true. A second version with a
// changed title is matched again.
func TestSearchKeysAtIngestEqualMatch(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	b, err := os.ReadFile("testdata/papers.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []struct {
		ID, Title, Abstract string
		Authors, Categories []string
	}
	if err := json.Unmarshal(b, &fixtures); err != nil {
		t.Fatal(err)
	}
	var batch []paper.Paper
	var vocab []string
	seen := map[string]bool{}
	for i, f := range fixtures {
		cats := f.Categories
		if len(cats) == 0 {
			cats = []string{"cs.DL"} // the OpenAlex works have none
		}
		p := paper.Paper{ArxivID: fmt.Sprintf("2610.%05d", i+1), Version: 1, Title: f.Title, Abstract: f.Abstract,
			PrimaryCategory: cats[0], Categories: cats}
		for _, a := range f.Authors {
			p.Authors = append(p.Authors, paper.Author{Name: a})
		}
		batch = append(batch, p)
		for _, w := range strings.Fields(f.Title + " " + f.Abstract + " " + strings.Join(f.Authors, " ")) {
			w = strings.Trim(w, `.,;:()"$\{}[]`)
			if len(w) > 2 && !seen[strings.ToLower(w)] && !strings.ContainsAny(w, `\$"(){}:`) {
				seen[strings.ToLower(w)] = true
				vocab = append(vocab, w)
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	term := func() string {
		w := vocab[r.IntN(len(vocab))]
		switch r.IntN(8) {
		case 0:
			return "ti:" + w
		case 1:
			return "abs:" + w
		case 2:
			return "au:" + w
		case 3:
			return `"` + w + " " + vocab[r.IntN(len(vocab))] + `"`
		}
		return w
	}
	cats := []string{"cat:cs.LG", "cat:cs", "cat:stat.ML", "cat:cs.CV", "cat:hep-th", "cat:math"}
	users := account.NewUsers(db)
	follows := follow.NewService(db)
	u, err := users.Ensure(ctx, &auth.Claims{Subject: "searcher"})
	if err != nil {
		t.Fatal(err)
	}
	searches := map[string]bool{}
	for len(searches) < 300 {
		var parts []string
		for range 1 + r.IntN(3) {
			parts = append(parts, term())
		}
		switch r.IntN(5) {
		case 0:
			parts = append(parts, cats[r.IntN(len(cats))])
		case 1:
			parts = append(parts, "-"+term())
		case 2:
			parts = []string{"(" + parts[0] + " OR " + term() + ")", strings.Join(parts[1:], " ")}
		}
		norm, err := follow.NormalizeQuery(strings.Join(parts, " "))
		if err != nil || searches[norm] {
			continue
		}
		searches[norm] = true
		if _, _, err := follows.Follow(ctx, u.ID, follow.Target{Kind: follow.Query, ID: norm}, follow.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string) {
		t.Helper()
		got := map[string][]string{}
		rows, err := db.Pool.Query(ctx, `
			SELECT DISTINCT p.arxiv_id, substr(k.key, 7) FROM search_matches k JOIN papers p ON p.id = k.paper_id
			WHERE k.key LIKE 'query:%'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, q string
			if err := rows.Scan(&id, &q); err != nil {
				t.Fatal(err)
			}
			got[id] = append(got[id], q)
		}
		var ids []int64
		if err := db.Pool.QueryRow(ctx, `SELECT array_agg(id) FROM papers`).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		stored, err := catalog.Load(ctx, tx, ids, catalog.AllFields)
		if err != nil {
			t.Fatal(err)
		}
		matches := 0
		for _, p := range stored {
			var want []string
			for norm := range searches {
				q, err := follow.CompileQuery(norm)
				if err != nil {
					t.Fatal(err)
				}
				if q.Match(p.Doc()) {
					want = append(want, norm)
				}
			}
			slices.Sort(want)
			have := got[p.ArxivID]
			slices.Sort(have)
			matches += len(want)
			if !slices.Equal(have, want) {
				t.Errorf("%s: %s: query keys %q, Match says %q", stage, p.ArxivID, have, want)
			}
		}
		if matches < 50 {
			t.Fatalf("%s: only %d matches: the property is not exercised", stage, matches)
		}
	}
	if _, err := in.Ingest(ctx, batch, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	check("first ingest")
	// New versions whose titles take another paper's words: the searches
	// they now match get rows (rows of the old text stay: a user was
	// told then).
	var v2 []paper.Paper
	for i := 0; i < len(batch); i += 3 {
		p := batch[i]
		p.Version = 2
		p.Title = batch[(i+1)%len(batch)].Title
		v2 = append(v2, p)
	}
	if _, err := in.Ingest(ctx, v2, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	// Every search the new text matches now has a row for the paper.
	for _, p := range v2 {
		stored := p
		for norm := range searches {
			q, _ := follow.CompileQuery(norm)
			if !q.Match(stored.Doc()) {
				continue
			}
			var n int
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM search_matches k JOIN papers pp ON pp.id = k.paper_id
				WHERE pp.arxiv_id = $1 AND k.key = $2`, p.ArxivID, "query:"+norm).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Errorf("v2 of %s matches %q but has no row", p.ArxivID, norm)
			}
		}
	}
}
