package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/paper"
)

// TestPreviewReadsInChunks: a preview reads the window newest first in
// chunks (500 papers) and evaluates each with no pooled connection held
// (OnChunk sees none acquired); papers announced at the same time across
// a chunk's edge are each read once; without a budget every paper is
// searched, and past the budget the preview stops after the first chunk
// with the exact answer for those papers, marked incomplete.
func TestPreviewReadsInChunks(t *testing.T) {
	t.Parallel()
	store, db := newStore(t)
	ctx := context.Background()
	// 1,100 papers in groups of 7 announced at the same minute, newest
	// first; every third is about diffusion models; one older than the
	// window.
	newest := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	at := func(i int) time.Time { return newest.Add(-time.Duration(i/7) * time.Minute) }
	var batch []paper.Paper
	for i := range 1100 {
		title := fmt.Sprintf("Graph kernels, part %d", i)
		if i%3 == 0 {
			title = fmt.Sprintf("Diffusion models, part %d", i)
		}
		batch = append(batch, testPaper(fmt.Sprintf("2609.%05d", i+1), func(p *paper.Paper) {
			p.Title, p.SubmittedAt, p.AnnouncedAt = title, at(i), at(i)
		}))
	}
	batch = append(batch, testPaper("2601.00001", func(p *paper.Paper) {
		p.Title, p.SubmittedAt, p.AnnouncedAt = "Diffusion models, long ago", newest.Add(-40*24*time.Hour), newest.Add(-40*24*time.Hour)
	}))
	if _, err := store.Ingest(ctx, batch, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	q, err := follow.CompileQuery("diffusion models")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-catalog.BackfillDays * 24 * time.Hour)
	chunks, held := 0, int32(0)
	onChunk := func(context.Context) {
		chunks++
		held = max(held, db.Pool.Stat().AcquiredConns())
	}
	pv, err := store.PreviewSearch(ctx, q, since, 10, catalog.PreviewOptions{OnChunk: onChunk})
	if err != nil {
		t.Fatal(err)
	}
	// Papers 0, 3, …, 1098 match: 367.
	if !pv.Complete || pv.Searched != 1100 || pv.Count != 367 || !pv.SearchedSince.Equal(at(1099)) || chunks != 3 || held != 0 {
		t.Fatalf("a preview without a budget: complete %v, searched %d, count %d, since %s, %d chunks, %d connections held while evaluating",
			pv.Complete, pv.Searched, pv.Count, pv.SearchedSince, chunks, held)
	}
	// The newest ten matches are those of the four newest minutes (0, 3,
	// …, 27), newest first (within a minute, by id).
	var got []string
	for i, p := range pv.Newest {
		got = append(got, p.ArxivID)
		if i > 0 && p.AnnouncedAt.After(pv.Newest[i-1].AnnouncedAt) {
			t.Errorf("the newest matches are not newest first: %v", got)
		}
	}
	slices.Sort(got)
	var want []string
	for i := 0; i <= 27; i += 3 {
		want = append(want, fmt.Sprintf("2609.%05d", i+1))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the newest matches: %v, want %v", got, want)
	}
	// Past the budget: the first chunk, the newest 500 (0…499: 167 match).
	chunks = 0
	pv, err = store.PreviewSearch(ctx, q, since, 10, catalog.PreviewOptions{Budget: time.Nanosecond, OnChunk: onChunk})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Complete || pv.Searched != 500 || pv.Count != 167 || !pv.SearchedSince.Equal(at(499)) || chunks != 1 || len(pv.Newest) != 10 {
		t.Fatalf("a preview past its budget: complete %v, searched %d, count %d, since %s, %d chunks",
			pv.Complete, pv.Searched, pv.Count, pv.SearchedSince, chunks)
	}
	// A budget the preview stays within: complete.
	if pv, err := store.PreviewSearch(ctx, q, since, 10, catalog.PreviewOptions{Budget: time.Minute}); err != nil || !pv.Complete || pv.Count != 367 {
		t.Errorf("a preview within its budget: %+v %v", pv, err)
	}
}
