package catalog_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/paper"
)

// bulkPapers are normalised papers of every shape BulkLoad meets: author
// ids and an institution, cross-lists, no researcher ids (due for
// enrichment), version 0 (stored as 1) and a later version; in arXiv id
// order, the order Ingest inserts them in.
func bulkPapers(t *testing.T) []paper.Paper {
	t.Helper()
	ps := []paper.Paper{
		testPaper("2202.00001", func(p *paper.Paper) {
			p.Title = "Graph transformers at scale"
			p.Authors = []paper.Author{{Name: "Ada Lovelace", IDs: []string{"s2:1", "openalex:A1"}}, {Name: "Alan Turing", IDs: []string{"s2:2"}}}
			p.Institutions = []string{"ror:03dbr7087"}
		}),
		testPaper("2202.00002", func(p *paper.Paper) {
			p.PrimaryCategory, p.Categories = "math.PR", []string{"math.PR", "cs.LG", "math.ST"}
		}),
		testPaper("2202.00003v3", func(p *paper.Paper) { p.Authors = []paper.Author{{Name: "Grace Hopper", IDs: []string{"host:7"}}} }),
		testPaper("astro-ph/9901001", func(p *paper.Paper) {
			p.PrimaryCategory, p.Categories, p.Version = "astro-ph", []string{"astro-ph"}, 0
		}),
	}
	for i := range ps {
		if fe := ps[i].Normalize(true); fe != nil {
			t.Fatalf("%s: %s %s", ps[i].ArxivID, fe.Field, fe.Reason)
		}
	}
	return ps
}

// stored is what a database holds of papers and their keys, without
// what differs by when it was written (times, seqs).
func stored(t *testing.T, db *database.DB) (papers, keys []string) {
	t.Helper()
	read := func(sql string) []string { return testdb.Strings(t, db, sql) }
	return read(`SELECT concat_ws('|', id, arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
			doi, journal_ref, comments, submitted_at, updated_at, announced_at, abs_url, pdf_url, source, deleted_at,
			enrich_after IS NOT NULL, enrich_attempts, openalex_id) FROM papers ORDER BY id`),
		read(`SELECT concat_ws('|', p.arxiv_id, k.key, k.version, k.cross_list, k.replacement, k.new_paper, k.event, k.detail)
			FROM paper_keys k JOIN papers p ON p.id = k.paper_id ORDER BY 1`)
}

func followSearch(t *testing.T, db *database.DB, q string) {
	t.Helper()
	ctx := context.Background()
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "searcher " + q})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := follow.ParseTarget("query", q)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := follow.NewService(db).Follow(ctx, u.ID, tg, follow.Options{}); err != nil {
		t.Fatal(err)
	}
}

// ingestedAndEmpty returns bulkPapers and two databases whose users follow
// searches: one where Ingest stored the papers, one with none (for a
// bulk loader to write).
func ingestedAndEmpty(t *testing.T, searches ...string) (ps []paper.Paper, ingested, empty *database.DB) {
	t.Helper()
	ingest, idb := newStore(t)
	_, bdb := newStore(t)
	for _, db := range []*database.DB{idb, bdb} {
		for _, q := range searches {
			followSearch(t, db, q)
		}
	}
	ps = bulkPapers(t)
	if _, err := ingest.Ingest(context.Background(), ps, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	return ps, idb, bdb
}

func highSeq(t *testing.T, db *database.DB) (high int64, times []int64) {
	t.Helper()
	ctx := context.Background()
	if err := db.Pool.QueryRow(ctx, `SELECT high_seq, ARRAY(SELECT to_seq FROM key_seq_times ORDER BY 1) FROM match_state`).Scan(&high, &times); err != nil {
		t.Fatal(err)
	}
	return high, times
}

// BulkLoad stores the rows Ingest stores for new papers, and its keys,
// with seqs that follow the papers' order and, within a paper, the keys'
// order; it moves the high seq once, to the last seq; and it does
// nothing else Ingest does: no match job, no query matches.
func TestBulkLoadWritesWhatIngestWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps, idb, bdb := ingestedAndEmpty(t, "graph transformers")
	var res catalog.BulkResult
	if err := bdb.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = catalog.BulkLoad(ctx, tx, slices.Values(ps), catalog.SourcePush)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantPapers, wantKeys := stored(t, idb)
	gotPapers, gotKeys := stored(t, bdb)
	if !slices.Equal(gotPapers, wantPapers) {
		t.Errorf("papers\n%q\nIngest's\n%q", gotPapers, wantPapers)
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("keys\n%q\nIngest's\n%q", gotKeys, wantKeys)
	}
	if res.Papers != len(ps) || res.Keys != len(wantKeys) || res.ToSeq-res.FromSeq+1 != int64(res.Keys) {
		t.Errorf("result %+v for %d papers, %d keys", res, len(ps), len(wantKeys))
	}
	rows, err := bdb.Pool.Query(ctx, `SELECT paper_id, key, seq FROM paper_keys ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	type seqRow struct {
		id  int64
		key string
		seq int64
	}
	seqs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seqRow, error) {
		var s seqRow
		return s, r.Scan(&s.id, &s.key, &s.seq)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(seqs, func(a, b seqRow) int {
		return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.key, b.key))
	}) || seqs[0].seq != res.FromSeq || seqs[len(seqs)-1].seq != res.ToSeq {
		t.Errorf("seqs do not follow papers and keys: %v", seqs)
	}
	if high, times := highSeq(t, bdb); high != res.ToSeq || !slices.Equal(times, []int64{res.ToSeq}) {
		t.Errorf("high seq %d with times %v, want %d once", high, times, res.ToSeq)
	}
	if n := matchJobs(t, bdb); n != 0 {
		t.Errorf("%d match jobs", n)
	}
	if ih, bh := count(t, idb, `SELECT count(*) FROM search_hits`), count(t, bdb, `SELECT count(*) FROM search_hits`); ih == 0 || bh != 0 {
		t.Errorf("query matches: Ingest %d (want some), BulkLoad %d (want none)", ih, bh)
	}
	err = bdb.InTx(ctx, func(tx pgx.Tx) error {
		_, err := catalog.BulkLoad(ctx, tx, slices.Values(ps[:1]), catalog.SourcePush)
		return err
	})
	if err == nil {
		t.Error("a paper stored already was loaded again")
	}
}

// BulkLoadMatching writes the query matches Ingest writes for new papers
// (search_hits rows per search, paper_search_hits per paper), with seqs
// after the key rows', and moves the high seq once, to the last; with
// no followed query it is BulkLoad.
func TestBulkLoadMatchingWritesIngestsSearchHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps, idb, bdb := ingestedAndEmpty(t, "graph transformers", "abstract cat:math.PR", "nothing-matches-this")
	var res catalog.BulkResult
	if err := bdb.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = catalog.BulkLoadMatching(ctx, tx, slices.Values(ps), catalog.SourcePush)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	hitsOf := func(db *database.DB) []string {
		return testdb.Strings(t, db, `SELECT concat_ws('|', h.key, h.replacement, h.new_paper,
				(SELECT string_agg(p.arxiv_id, ',' ORDER BY p.arxiv_id) FROM papers p WHERE p.id = ANY(h.paper_ids)))
			FROM search_hits h ORDER BY 1`)
	}
	paperHitsOf := func(db *database.DB) []string {
		return testdb.Strings(t, db, `SELECT concat_ws('|', p.arxiv_id, cardinality(s.seqs)) FROM paper_search_hits s JOIN papers p ON p.id = s.paper_id ORDER BY 1`)
	}
	want, got := hitsOf(idb), hitsOf(bdb)
	if len(want) != 2 || !slices.Equal(got, want) {
		t.Errorf("search hits\n%q\nIngest's\n%q", got, want)
	}
	if got, want := paperHitsOf(bdb), paperHitsOf(idb); !slices.Equal(got, want) {
		t.Errorf("paper search hits\n%q\nIngest's\n%q", got, want)
	}
	_, wantKeys := stored(t, idb)
	if res.Papers != len(ps) || res.Keys != len(wantKeys) || res.HitRows != 2 || res.Hits != 2 || res.ToSeq-res.FromSeq+1 != int64(res.Keys+res.HitRows) {
		t.Errorf("result %+v for %d papers, %d keys, 2 hit rows", res, len(ps), len(wantKeys))
	}
	if n := count(t, bdb, `SELECT count(*) FROM search_hits WHERE seq <= (SELECT max(seq) FROM paper_keys)`); n != 0 {
		t.Errorf("%d search hits with a seq before the key rows'", n)
	}
	if high, times := highSeq(t, bdb); high != res.ToSeq || !slices.Equal(times, []int64{res.ToSeq}) {
		t.Errorf("high seq %d with times %v, want %d once", high, times, res.ToSeq)
	}
	if n := matchJobs(t, bdb); n != 0 {
		t.Errorf("%d match jobs", n)
	}
}

// DeletePrefix deletes the papers of the prefix only (LIKE's wildcards in
// it are plain characters), with their keys and their query
// matches, and moves the high seq past the removal; an empty prefix
// deletes nothing. RemoveSearchHits deletes every query match and
// moves the high seq only when there was one.
func TestDeletePrefixAndRemoveSearchHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, db := newStore(t)
	followSearch(t, db, "graph")
	title := func(p *paper.Paper) { p.Title = "A graph of things" }
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2901.00001", title), testPaper("2901.00002", title),
		testPaper("2902.00001", title), testPaper("2212.00001")}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	del := func(prefix string) (int, error) {
		var n int
		err := db.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			n, err = catalog.DeletePrefix(ctx, tx, prefix)
			return err
		})
		return n, err
	}
	if n, err := del(""); err == nil || n != 0 {
		t.Errorf("an empty prefix: %d, %v", n, err)
	}
	high, _ := highSeq(t, db)
	if n, err := del("290_."); err != nil || n != 0 {
		t.Errorf("a prefix with _: deleted %d (%v)", n, err)
	}
	if h, _ := highSeq(t, db); h != high {
		t.Error("deleting nothing moved the high seq")
	}
	if n, err := del("2901."); err != nil || n != 2 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	if h, times := highSeq(t, db); h <= high || times[len(times)-1] != h {
		t.Errorf("high seq %d after %d, times %v", h, high, times)
	}
	if n := count(t, db, `SELECT count(*) FROM papers`); n != 2 {
		t.Errorf("%d papers left", n)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys k WHERE NOT EXISTS (SELECT 1 FROM papers p WHERE p.id = k.paper_id)`); n != 0 {
		t.Errorf("%d keys of deleted papers", n)
	}
	if n := count(t, db, `SELECT count(*) FROM search_hits h, unnest(h.paper_ids) id WHERE id NOT IN (SELECT id FROM papers)`); n != 0 {
		t.Errorf("%d query matches of deleted papers", n)
	}
	if n := count(t, db, `SELECT count(*) FROM search_hits`); n != 1 {
		t.Errorf("%d search_hits rows left, want the kept paper's", n)
	}

	remove := func() int {
		var n int
		if err := db.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			n, err = catalog.RemoveSearchHits(ctx, tx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	high, _ = highSeq(t, db)
	if n := remove(); n != 1 || count(t, db, `SELECT count(*) FROM search_hits`)+count(t, db, `SELECT count(*) FROM paper_search_hits`) != 0 {
		t.Errorf("RemoveSearchHits removed %d rows and left some", n)
	}
	moved, _ := highSeq(t, db)
	if moved <= high {
		t.Error("removing matches did not move the high seq")
	}
	if n := remove(); n != 0 {
		t.Errorf("a second RemoveSearchHits removed %d", n)
	}
	if h, _ := highSeq(t, db); h != moved {
		t.Error("removing nothing moved the high seq")
	}
}
