package fediverse_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"followfeed/fediverse"
)

// TestOutboxPagesWithMaxID: an outbox holding more activities than a page
// is read whole by following next links: every activity exactly once,
// newest first, at most OutboxPageSize a page, and no next link on the
// last page (none after a page that ends the outbox exactly). Pages are
// keyed by max_id, not offsets: activities published while a client is
// between pages do not shift what its next link gives.
func TestOutboxPagesWithMaxID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.follow("alice", "host_1955166")
	e.deliver() // the Accept (never listed in the outbox)
	info := e.actor("host_1955166")
	pushPapers := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			e.push(researcherPaper(fmt.Sprintf("2401.%05d", i), 1, fmt.Sprintf("Paper %d", i), "host:1955166"))
		}
		if errs := e.deliver(); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	// activityNumber is the n of an activity's id …/ap/activities/n.
	activityNumber := func(raw json.RawMessage) int64 {
		t.Helper()
		var a struct{ ID, Type string }
		if err := json.Unmarshal(raw, &a); err != nil || a.Type != "Create" {
			t.Fatalf("outbox item %s: %v", raw, err)
		}
		n, err := strconv.ParseInt(a.ID[strings.LastIndexByte(a.ID, '/')+1:], 10, 64)
		if err != nil {
			t.Fatalf("activity id %q", a.ID)
		}
		return n
	}
	// maxID reads a next link, which must be the outbox's own URL.
	maxID := func(next string) int64 {
		t.Helper()
		u, err := url.Parse(next)
		if err != nil || !strings.HasPrefix(next, info.ID+"/outbox?") {
			t.Fatalf("next link %q is not the outbox's", next)
		}
		n, err := strconv.ParseInt(u.Query().Get("max_id"), 10, 64)
		if err != nil {
			t.Fatalf("next link %q has no max_id", next)
		}
		return n
	}
	// walk reads the outbox from page (the first: 0) on, and returns the
	// activities' numbers and each page's size.
	walk := func(page int64) (items []int64, sizes []int) {
		t.Helper()
		for range 100 {
			p, err := e.svc.OutboxPage(e.ctx, info, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.OrderedItems) > fediverse.OutboxPageSize || p.PartOf != info.ID+"/outbox" {
				t.Fatalf("page %d: %d items, partOf %q", page, len(p.OrderedItems), p.PartOf)
			}
			sizes = append(sizes, len(p.OrderedItems))
			for _, raw := range p.OrderedItems {
				items = append(items, activityNumber(raw))
			}
			if p.Next == "" {
				return items, sizes
			}
			page = maxID(p.Next)
		}
		t.Fatal("the next links do not end")
		return nil, nil
	}
	// check: want distinct activities, newest first, each once.
	check := func(what string, items []int64, want int) {
		t.Helper()
		seen := map[int64]bool{}
		for i, n := range items {
			if seen[n] {
				t.Errorf("%s: activity %d twice", what, n)
			}
			seen[n] = true
			if i > 0 && n >= items[i-1] {
				t.Errorf("%s: activity %d after %d: not newest first", what, n, items[i-1])
			}
		}
		if len(seen) != want {
			t.Errorf("%s: %d activities, want %d", what, len(seen), want)
		}
	}

	// Two full pages: the second ends the outbox, with no next link.
	pushPapers(0, 2*fediverse.OutboxPageSize)
	if c, err := e.svc.Outbox(e.ctx, info); err != nil || c.TotalItems != int64(2*fediverse.OutboxPageSize) || c.First != info.ID+"/outbox?page=true" {
		t.Fatalf("outbox %+v %v", c, err)
	}
	items, sizes := walk(0)
	check("two pages", items, 2*fediverse.OutboxPageSize)
	if len(sizes) != 2 {
		t.Errorf("pages of %v, want two full ones", sizes)
	}
	// Every Create the peer received is in the outbox.
	var delivered []int64
	for _, r := range creates(e.peer.Received()) {
		delivered = append(delivered, activityNumber(r.Body))
	}
	slices.SortFunc(delivered, func(a, b int64) int { return cmp.Compare(b, a) })
	if !slices.Equal(delivered, items) {
		t.Errorf("the peer received the Creates %v, the outbox lists %v", delivered, items)
	}

	// A client has the first page; five more papers are posted; its next
	// link still gives the page after the one it read.
	first, err := e.svc.OutboxPage(e.ctx, info, 0)
	if err != nil {
		t.Fatal(err)
	}
	pushPapers(100, 5)
	rest, _ := walk(maxID(first.Next))
	if want := items[fediverse.OutboxPageSize:]; !slices.Equal(rest, want) {
		t.Errorf("after new posts the next link gave %v, want the older %v", rest, want)
	}
	// Read anew: 45 in pages of 20, 20 and 5, the new ones first.
	items, sizes = walk(0)
	check("after new posts", items, 2*fediverse.OutboxPageSize+5)
	if len(sizes) != 3 || sizes[2] != 5 {
		t.Errorf("pages of %v, want 20, 20, 5", sizes)
	}
	// A max_id below every activity is an empty last page.
	if p, err := e.svc.OutboxPage(e.ctx, info, items[len(items)-1]); err != nil || len(p.OrderedItems) != 0 || p.Next != "" {
		t.Errorf("past the end: %+v %v", p, err)
	}
}
