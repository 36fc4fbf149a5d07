package paper

import (
	"followfeed/follow"
	"followfeed/search"
)

// Key is one match key of a paper.
type Key struct {
	Key   string
	Cross bool // known only from a cross-list category
}

// Keys returns the paper's match keys: its categories and their archives
// (canonicalised, cross-lists flagged), every author's researcher ids and
// every institution id. The result is deduplicated and deterministic.
func (p *Paper) Keys() []Key {
	var out []Key
	seen := map[string]bool{}
	for _, ck := range follow.CategoryKeys(p.PrimaryCategory, p.Categories) {
		if !seen[ck.Key] {
			seen[ck.Key] = true
			out = append(out, Key{Key: ck.Key, Cross: ck.Cross})
		}
	}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, Key{Key: k})
		}
	}
	for _, a := range p.Authors {
		for _, id := range a.IDs {
			add(follow.Target{Kind: follow.Researcher, ID: id}.Key())
		}
	}
	for _, id := range p.Institutions {
		add(follow.Target{Kind: follow.Institution, ID: id}.Key())
	}
	return out
}

// Doc returns the paper's text as queries see it.
func (p *Paper) Doc() *search.Doc {
	names := make([]string, len(p.Authors))
	for i, a := range p.Authors {
		names[i] = a.Name
	}
	cks := follow.CategoryKeys(p.PrimaryCategory, p.Categories)
	keys := make([]string, len(cks))
	for i, k := range cks {
		keys[i] = k.Key
	}
	return search.NewDoc(p.Title, p.Abstract, names, keys)
}
