package ranking

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/paper"
	"followfeed/relevance"
)

// backgroundSize is how many of the corpus's papers every model learns
// against as negatives (relevance.Background): a sample spread evenly over
// the corpus's older three quarters, shared by every user of the process.
const backgroundSize = 200

// loadChunk is how many papers one statement of a corpus build reads.
const loadChunk = 2000

// texts is the process's view of paper texts for ranking: the corpus the
// words' document frequencies come from, its background sample, and a
// cache of papers' vectors under that corpus.
type texts struct {
	db      *database.DB
	params  relevance.Params
	papers  int
	maxAge  time.Duration
	maxVecs int

	// build serialises corpus builds; mu guards the fields below it.
	build sync.Mutex
	mu    sync.Mutex
	gen   *generation
	vecs  map[int64]*list.Element
	// The cache is two LRU lists of *cachedVector (most recent at the
	// front), one map: shared holds the vectors surfaces ranked (digests,
	// feeds, the inbox: candidates many users share), at most maxVecs
	// less a quarter, and examples the vectors only trainings read (a
	// user's persons' papers, flow and marks), at most a quarter. A burst
	// of trainings (the bench's cold start: 3,000 first models of some
	// 250 examples each) pushed every shared candidate out of a single
	// list, and the next digests made their vectors again; a user's
	// next click still finds their examples.
	shared, examples *list.List
}

// generation is one corpus and the vectors made with it.
type generation struct {
	corpus     *relevance.Corpus
	background []*relevance.Vector
	built      time.Time
}

type cachedVector struct {
	id     int64
	gen    *generation
	v      *relevance.Vector
	shared bool // in texts.shared, else in texts.examples
}

// vectorUse is what vectors are read for: where they go in the cache.
type vectorUse int

const (
	// forRanking: a surface's candidates; read or made, a vector becomes
	// the most recent of the shared list (moved there from the
	// examples).
	forRanking vectorUse = iota
	// forTraining: a user's examples; made, a vector becomes the most
	// recent of the examples, read, it stays where it is.
	forTraining
)

// listOf is the list c is in.
func (t *texts) listOf(c *cachedVector) *list.List {
	if c.shared {
		return t.shared
	}
	return t.examples
}

// capOf is the most vectors the list of shared (or examples) holds.
func (t *texts) capOf(shared bool) int {
	ex := max(t.maxVecs/4, 1)
	if shared {
		return max(t.maxVecs-ex, 1)
	}
	return ex
}

// keep puts c in the cache as the most recent of its list (removing the
// entry of its id first), evicting that list's least recent beyond its
// cap. t.mu is held.
func (t *texts) keep(c *cachedVector) {
	if e, ok := t.vecs[c.id]; ok {
		t.listOf(e.Value.(*cachedVector)).Remove(e)
	}
	l := t.listOf(c)
	t.vecs[c.id] = l.PushFront(c)
	for l.Len() > t.capOf(c.shared) {
		old := l.Remove(l.Back()).(*cachedVector)
		delete(t.vecs, old.id)
	}
}

func newTexts(db *database.DB, p relevance.Params, papers int, maxAge time.Duration, maxVecs int) *texts {
	return &texts{db: db, params: p, papers: papers, maxAge: maxAge, maxVecs: maxVecs,
		vecs: map[int64]*list.Element{}, shared: list.New(), examples: list.New()}
}

// current returns the corpus generation, building the first one (the
// caller waits: a few seconds for a full corpus) or, when it is older than
// maxAge, a new one while the old one serves.
func (t *texts) current(ctx context.Context) (*generation, error) {
	t.mu.Lock()
	g := t.gen
	t.mu.Unlock()
	if g != nil {
		if time.Since(g.built) > t.maxAge && t.build.TryLock() {
			go func() {
				defer t.build.Unlock()
				// A failed rebuild keeps the old corpus; the next
				// request past maxAge tries again.
				if ng, err := t.load(context.WithoutCancel(ctx)); err == nil {
					t.swap(ng)
				}
			}()
		}
		return g, nil
	}
	t.build.Lock()
	defer t.build.Unlock()
	t.mu.Lock()
	g = t.gen
	t.mu.Unlock()
	if g != nil {
		return g, nil
	}
	g, err := t.load(ctx)
	if err != nil {
		return nil, err
	}
	t.swap(g)
	return g, nil
}

// swap makes g current and forgets the vectors of the old corpus.
func (t *texts) swap(g *generation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen = g
	t.vecs = map[int64]*list.Element{}
	t.shared.Init()
	t.examples.Init()
}

// load builds a generation from the newest papers: each chunk's texts are
// counted, then the background sample's vectors made.
func (t *texts) load(ctx context.Context) (*generation, error) {
	g := &generation{corpus: relevance.NewCorpus(t.params), built: time.Now()}
	var sample []*relevance.Paper
	err := t.db.InTx(ctx, func(tx pgx.Tx) error {
		ids, err := catalog.NewestIDs(ctx, tx, t.papers)
		if err != nil {
			return err
		}
		// The background comes from the older three quarters: the newest
		// papers are the ones being ranked, never negatives by chance.
		skip := len(ids) / 4
		every := max((len(ids)-skip)/backgroundSize, 1)
		for start := 0; start < len(ids); start += loadChunk {
			chunk := ids[start:min(start+loadChunk, len(ids))]
			ps, err := catalog.Load(ctx, tx, chunk, catalog.AllFields)
			if err != nil {
				return err
			}
			batch := make([]*relevance.Paper, 0, len(chunk))
			for i, id := range chunk {
				p, ok := ps[id]
				if !ok {
					continue
				}
				rp := toRelevance(&p)
				batch = append(batch, rp)
				if n := start + i - skip; n >= 0 && n%every == 0 && len(sample) < backgroundSize {
					sample = append(sample, rp)
				}
			}
			g.corpus.Add(batch...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("building the ranking corpus: %w", err)
	}
	for _, p := range sample {
		g.background = append(g.background, g.corpus.Vector(p))
	}
	return g, nil
}

// vectors returns the vectors of papers ids under generation g, from the
// cache or made from the papers (loaded when have lacks them or their
// abstract; have may be nil), kept in the cache as use says. Ids of
// papers not stored are absent.
func (t *texts) vectors(ctx context.Context, g *generation, ids []int64, have map[int64]*paper.Paper, use vectorUse) (map[int64]*relevance.Vector, error) {
	out := make(map[int64]*relevance.Vector, len(ids))
	var missing []int64
	t.mu.Lock()
	for _, id := range ids {
		if e, ok := t.vecs[id]; ok && e.Value.(*cachedVector).gen == g {
			c := e.Value.(*cachedVector)
			switch {
			case use != forRanking:
			case c.shared:
				t.shared.MoveToFront(e)
			default: // a training's example ranked: shared from now on
				t.keep(&cachedVector{id: id, gen: g, v: c.v, shared: true})
			}
			out[id] = c.v
			continue
		}
		if _, dup := out[id]; !dup {
			missing = append(missing, id)
		}
	}
	t.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	var load []int64
	made := make(map[int64]*relevance.Vector, len(missing))
	for _, id := range missing {
		if p := have[id]; p != nil && p.Abstract != "" {
			made[id] = g.corpus.Vector(toRelevance(p))
		} else {
			load = append(load, id)
		}
	}
	if len(load) > 0 {
		var ps map[int64]paper.Paper
		err := t.db.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			ps, err = catalog.Load(ctx, tx, load, catalog.AllFields)
			return err
		})
		if err != nil {
			return nil, err
		}
		for id, p := range ps {
			made[id] = g.corpus.Vector(toRelevance(&p))
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, v := range made {
		out[id] = v
		if t.gen != g { // a new corpus meanwhile: these are not cached
			continue
		}
		shared := use == forRanking
		if e, ok := t.vecs[id]; ok && e.Value.(*cachedVector).shared {
			shared = true // another call made it meanwhile, for ranking
		}
		t.keep(&cachedVector{id: id, gen: g, v: v, shared: shared})
	}
	return out, nil
}

// toRelevance is what ranking reads of a stored paper. Its id is the arXiv
// id (reasons name papers by it, and followed papers are named so in a
// Profile). Citations are not part of it: the papers a paper cites are
// known only as a user's citation events, and a vector is shared by every
// user.
func toRelevance(p *paper.Paper) *relevance.Paper {
	authors := make([]string, len(p.Authors))
	for i, a := range p.Authors {
		authors[i] = a.Name
	}
	return &relevance.Paper{ID: p.ArxivID, Title: p.Title, Abstract: p.Abstract, Authors: authors,
		Categories: primaryFirst(p.PrimaryCategory, p.Categories), Institutions: p.Institutions}
}

// primaryFirst is cats with primary first (relevance reads a marked
// paper's first category as its topic), whatever order a row stored them
// in; cats itself when it is so already.
func primaryFirst(primary string, cats []string) []string {
	if primary == "" || len(cats) > 0 && cats[0] == primary {
		return cats
	}
	out := make([]string, 0, len(cats)+1)
	out = append(out, primary)
	for _, c := range cats {
		if c != primary {
			out = append(out, c)
		}
	}
	return out
}
