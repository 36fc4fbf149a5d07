package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/internal/testpaper"
	"followfeed/paper"
)

var (
	newStore  = testpaper.NewStore
	testPaper = testpaper.New
	count     = testpaper.Count
	matchJobs = testpaper.MatchJobs
)

func TestIngestIsIdempotent(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	batch := []paper.Paper{testPaper("2202.02326"), testPaper("astro-ph/9901001", func(p *paper.Paper) {
		p.PrimaryCategory, p.Categories = "astro-ph", []string{"astro-ph"}
	})}
	res, err := in.Ingest(ctx, batch, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if res.New != 2 || res.Keys == 0 || matchJobs(t, db) != 1 {
		t.Fatalf("first ingest: %+v, jobs %d", res, matchJobs(t, db))
	}
	keys := count(t, db, `SELECT count(*) FROM paper_keys`)
	res, err = in.Ingest(ctx, batch, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 2 || res.Keys != 0 || res.New != 0 {
		t.Errorf("second ingest changed something: %+v", res)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys`); n != keys {
		t.Errorf("keys %d -> %d", keys, n)
	}
	if matchJobs(t, db) != 1 {
		t.Errorf("a second match job was enqueued")
	}
}

func TestReplacementAndEnrichmentWriteOnlyWhatIsNew(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v1")}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	before := count(t, db, `SELECT count(*) FROM paper_keys`)

	// Enrichment: the same version now knows the author's ids.
	res, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.02326", func(p *paper.Paper) {
		p.Authors = []paper.Author{{Name: "Ada Lovelace", IDs: []string{"openalex:A5023888391"}}}
		p.Institutions = []string{"ror:03dbr7087"}
	})}, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated != 1 || res.Keys != 2 {
		t.Fatalf("enrichment: %+v", res)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys WHERE replacement`); n != 0 {
		t.Errorf("enrichment wrote %d replacement rows", n)
	}

	// A later OAI record without ids must not erase them.
	res, err = in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v1")}, catalog.SourceOAI)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 1 {
		t.Errorf("re-harvest without ids: %+v", res)
	}
	if n := count(t, db, `SELECT count(*) FROM papers WHERE authors @> '[{"ids": ["openalex:A5023888391"]}]'`); n != 1 {
		t.Errorf("author ids were lost")
	}

	// v2 replaces: every key gets a replacement row.
	res, err = in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v2", func(p *paper.Paper) { p.Title = "Better title" })}, catalog.SourceOAI)
	if err != nil {
		t.Fatal(err)
	}
	all := before + 2
	if res.Replaced != 1 || res.Keys != all {
		t.Errorf("replacement: %+v (want %d keys)", res, all)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_keys WHERE replacement AND version = 2`); n != all {
		t.Errorf("%d replacement rows, want %d", n, all)
	}
	// v1 arriving late changes nothing.
	res, _ = in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v1")}, catalog.SourceOAI)
	if res.Unchanged != 1 || count(t, db, `SELECT version FROM papers`) != 2 {
		t.Errorf("stale version: %+v", res)
	}
}

func TestDeletedRecordsAreWithdrawn(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	in.Ingest(ctx, []paper.Paper{testPaper("2202.02326")}, catalog.SourceOAI)
	res, err := in.Ingest(ctx, []paper.Paper{{ArxivID: "2202.02326", Deleted: true}, {ArxivID: "2101.00001", Deleted: true}}, catalog.SourceOAI)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 1 || res.Unchanged != 1 || count(t, db, `SELECT count(*) FROM papers WHERE deleted_at IS NOT NULL`) != 1 {
		t.Errorf("deleted: %+v", res)
	}
}

func TestInvalidPushWritesNothing(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	_, err := in.Ingest(context.Background(), []paper.Paper{
		testPaper("2202.02326"),
		testPaper("not-an-id"),
		testPaper("2202.02327", func(p *paper.Paper) { p.Authors[0].IDs = []string{"orcid:0000-0002-1825-0098"} }),
		testPaper("2202.02328", func(p *paper.Paper) { p.Title = "" }),
	}, catalog.SourcePush)
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.Invalid || len(e.Details) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
	want := map[int]string{1: "arxiv_id", 2: "authors[0].ids[0]", 3: "title"}
	for _, d := range e.Details {
		if want[d.Index] != d.Field || d.Reason == "" {
			t.Errorf("detail %+v", d)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM papers`); n != 0 {
		t.Errorf("%d papers written from an invalid batch", n)
	}
	// The same from a harvest: the invalid ones are skipped, the rest stored.
	res, err := in.Ingest(context.Background(), []paper.Paper{testPaper("2202.02326"), testPaper("not-an-id")}, catalog.SourceOAI)
	if err != nil || res.New != 1 || len(res.Skipped) != 1 {
		t.Errorf("lenient: %+v %v", res, err)
	}
}

func TestBatchLimit(t *testing.T) {
	t.Parallel()
	in, _ := newStore(t)
	_, err := in.Ingest(context.Background(), make([]paper.Paper, catalog.MaxBatch+1), catalog.SourcePush)
	if apperr.CodeOf(err) != apperr.TooLarge {
		t.Errorf("want TooLarge, got %v", err)
	}
}

// TestConcurrentWritersNeverLetAWatermarkReaderSkip runs 8 ingesting
// goroutines against a reader goroutine that repeatedly takes the high seq
// W and reads the rows with seq in (previous W, W] (its own watermark is the
// previous W). If seq order differed from commit order, a row with a small
// seq could commit after the reader moved past it and would never be read.
// Every row must be read exactly once.
func TestConcurrentWritersNeverLetAWatermarkReaderSkip(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	var writing atomic.Bool
	writing.Store(true)
	seen := map[int64]int{}
	readerDone := make(chan error, 1)
	go func() {
		var last int64
		for {
			stop := !writing.Load()
			var w int64
			if err := db.Pool.QueryRow(ctx, `SELECT high_seq FROM match_state`).Scan(&w); err != nil {
				readerDone <- err
				return
			}
			rows, err := db.Pool.Query(ctx, `SELECT seq FROM paper_keys WHERE seq > $1 AND seq <= $2`, last, w)
			if err != nil {
				readerDone <- err
				return
			}
			for rows.Next() {
				var s int64
				rows.Scan(&s)
				seen[s]++
			}
			rows.Close()
			last = w
			if stop {
				readerDone <- nil
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range 15 {
				var batch []paper.Paper
				for i := range 20 {
					// Overlapping ids across goroutines exercise the
					// insert races as well.
					id := fmt.Sprintf("2301.%05d", (g*7+b*20+i)%600)
					batch = append(batch, testPaper(id, func(p *paper.Paper) {
						p.Authors = []paper.Author{{Name: "X", IDs: []string{fmt.Sprintf("s2:%d", g*1000+b+1)}}}
					}))
				}
				if _, err := in.Ingest(ctx, batch, catalog.SourcePush); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	writing.Store(false)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT seq FROM paper_keys`)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for rows.Next() {
		var s int64
		rows.Scan(&s)
		total++
		if seen[s] != 1 {
			t.Errorf("row with seq %d was read %d times by the watermark reader", s, seen[s])
		}
	}
	if total == 0 || len(seen) != total {
		t.Errorf("reader saw %d rows of %d", len(seen), total)
	}
}

func TestIngestUnavailableDatabase(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	db.Close()
	_, err := in.Ingest(context.Background(), []paper.Paper{testPaper("2202.02326")}, catalog.SourcePush)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("want an error from a closed pool, got %v", err)
	}
}

// TestPapersWithoutAuthorIDsAreQueuedForEnrichment: from either source, a
// new paper whose authors carry no ids is due for an OpenAlex lookup; one
// that already has ids is not.
func TestPapersWithoutAuthorIDsAreQueuedForEnrichment(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	withIDs := func(p *paper.Paper) {
		p.Authors = []paper.Author{{Name: "Ada Lovelace", IDs: []string{"host:42"}}}
	}
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.00001"), testPaper("2202.00002", withIDs)}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.00003"), testPaper("2202.00004", withIDs)}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT arxiv_id FROM papers WHERE enrich_after IS NOT NULL ORDER BY arxiv_id`)
	if err != nil {
		t.Fatal(err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(due, []string{"2202.00001", "2202.00003"}) {
		t.Errorf("due for enrichment: %v, want the two papers without author ids", due)
	}
}

// A batch with new papers (their keys are copied in under a block of
// seqs) and a new version of a stored one (inserted row by row) writes
// every key once, with distinct seqs inside the batch's range, and moves
// the high seq to its end.
func TestKeySeqsOfMixedBatch(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v1")}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	res, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.02326v2"), testPaper("2202.02327"), testPaper("2202.02328")}, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if res.New != 2 || res.Replaced != 1 {
		t.Fatalf("second batch: %+v", res)
	}
	rows := count(t, db, fmt.Sprintf(`SELECT count(*) FROM paper_keys WHERE seq BETWEEN %d AND %d`, res.FromSeq, res.ToSeq))
	seqs := count(t, db, fmt.Sprintf(`SELECT count(DISTINCT seq) FROM paper_keys WHERE seq BETWEEN %d AND %d`, res.FromSeq, res.ToSeq))
	copied := count(t, db, fmt.Sprintf(`SELECT count(*) FROM paper_keys WHERE new_paper AND seq BETWEEN %d AND %d`, res.FromSeq, res.ToSeq))
	if rows != res.Keys || seqs != rows || copied == 0 || copied == rows {
		t.Errorf("%d rows (%d new papers'), %d distinct seqs in %d..%d; the ingest wrote %d", rows, copied, seqs, res.FromSeq, res.ToSeq, res.Keys)
	}
	if high := count(t, db, `SELECT high_seq FROM match_state`); int64(high) != res.ToSeq {
		t.Errorf("high seq %d, batch ends at %d", high, res.ToSeq)
	}
	if n := count(t, db, `SELECT max(seq) FROM paper_keys`); int64(n) != res.ToSeq {
		t.Errorf("newest seq %d, batch ends at %d", n, res.ToSeq)
	}
}

// LivePaper names a stored paper by any form of its arXiv id; a
// withdrawn or unknown paper is a NotFound, a string that is no arXiv id
// an Invalid naming arxiv_id.
func TestLivePaper(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	in.Ingest(ctx, []paper.Paper{testPaper("2202.02326"), testPaper("2202.02327")}, catalog.SourceOAI)
	in.Ingest(ctx, []paper.Paper{{ArxivID: "2202.02327", Deleted: true}}, catalog.SourceOAI)
	for arg, want := range map[string]apperr.Code{"arXiv:2202.02326v2": "", "2202.02327": apperr.NotFound, "2101.00001": apperr.NotFound, "not-an-id": apperr.Invalid} {
		err := db.InTx(ctx, func(tx pgx.Tx) error {
			id, p, err := catalog.LivePaper(ctx, tx, arg)
			if err == nil && (id == 0 || p.ArxivID != "2202.02326" || p.Title == "" || p.Abstract != "") {
				t.Errorf("LivePaper(%q) = %d, %+v", arg, id, p)
			}
			return err
		})
		e, _ := apperr.As(err)
		switch {
		case want == "" && err != nil:
			t.Errorf("LivePaper(%q): %v", arg, err)
		case want != "" && (e == nil || e.Code != want || (want == apperr.Invalid && e.Field != "arxiv_id")):
			t.Errorf("LivePaper(%q) = %v, want code %v", arg, err, want)
		}
	}
}

// TestVersionsChangeWithTheRow: a paper's version (QueueVersions) is the
// same on every read until its row changes, and changes when an
// enrichment or a new arXiv version rewrites it; an ingest that changes
// nothing keeps it; an unknown id has none.
func TestVersionsChangeWithTheRow(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	var id int64
	version := func() uint32 {
		t.Helper()
		var got map[int64]uint32
		var b pgx.Batch
		catalog.QueueVersions(&b, []int64{id, id + 1000}, func(m map[int64]uint32) { got = m })
		if err := db.Pool.SendBatch(ctx, &b).Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := got[id+1000]; ok || len(got) != 1 {
			t.Fatalf("versions: %v, want one for paper %d only", got, id)
		}
		return got[id]
	}
	ingest := func(p paper.Paper) {
		t.Helper()
		if _, err := in.Ingest(ctx, []paper.Paper{p}, catalog.SourcePush); err != nil {
			t.Fatal(err)
		}
	}
	ingest(testPaper("2202.02326v1"))
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM papers WHERE arxiv_id = '2202.02326'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	v1 := version()
	ingest(testPaper("2202.02326v1"))
	if v := version(); v != v1 {
		t.Errorf("an ingest that changed nothing moved the version %d -> %d", v1, v)
	}
	ingest(testPaper("2202.02326v1", func(p *paper.Paper) {
		p.Authors = []paper.Author{{Name: "Ada Lovelace", IDs: []string{"openalex:A5023888391"}}}
	}))
	v2 := version()
	if v2 == v1 {
		t.Errorf("an enrichment kept the version %d", v1)
	}
	ingest(testPaper("2202.02326v2", func(p *paper.Paper) { p.Title = "A second version" }))
	if v := version(); v == v2 || v == v1 {
		t.Errorf("a new version kept the version %d (before: %d, %d)", v, v1, v2)
	}
}

// TestVersionsOfIDsAskedForOnly: QueueVersions reads neighbouring ids in
// one run, so the papers between two ids asked for are read too; done
// gets the stored papers asked for and no other, whatever their order
// and repetitions, and each the version a probe of its own row gives.
func TestVersionsOfIDsAskedForOnly(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	var batch []paper.Paper
	for i := range 12 {
		batch = append(batch, testPaper(fmt.Sprintf("2202.%05d", 10+i)))
	}
	if _, err := in.Ingest(ctx, batch, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := db.Pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM papers`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	// Neighbours with papers between them, one far from the rest, one
	// asked for twice, and ids of no paper beside and far from them.
	ask := []int64{ids[9], ids[0], ids[2], ids[3], ids[0], ids[11], ids[11] + 2, ids[11] + 100000}
	var got map[int64]uint32
	var b pgx.Batch
	catalog.QueueVersions(&b, ask, func(m map[int64]uint32) { got = m })
	if err := db.Pool.SendBatch(ctx, &b).Close(); err != nil {
		t.Fatal(err)
	}
	want := map[int64]uint32{}
	for _, id := range []int64{ids[0], ids[2], ids[3], ids[9], ids[11]} {
		var v int64
		if err := db.Pool.QueryRow(ctx, `SELECT xmin::text::bigint FROM papers WHERE id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		want[id] = uint32(v)
	}
	if !maps.Equal(got, want) {
		t.Errorf("versions of %v = %v, want %v", ask, got, want)
	}
}
