package channels_test

import (
	"slices"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/paper"
)

// A paper the user marked done (package inbox) before their push
// channels' window is collected is not pushed, to a channel of every
// follow or to one filtered to a follow; the window's other papers are.
func TestPushLeavesOutPapersMarkedDone(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	user := e.reader("reader", "UTC", 7, "monday", "category/cs.LG")
	lg, err := follow.ParseTarget("category", "cs.LG")
	if err != nil {
		t.Fatal(err)
	}
	e.webhook(user, "all", "instant")
	e.webhook(user, "only", "instant", lg)
	res, err := e.papers.Ingest(e.ctx, []paper.Paper{testPaper("2611.00001", "cs.LG"), testPaper("2611.00002", "cs.LG")}, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inbox.New(e.db, e.matcher).Set(e.ctx, user, "2611.00002", inbox.Done); err != nil {
		t.Fatal(err)
	}
	e.match(res)
	e.run()
	for _, ch := range []string{"all", "only"} {
		if got := e.rcv.papers(ch); !slices.Equal(got, []string{"2611.00001"}) {
			t.Errorf("channel %s got %v, want only the paper not marked done", ch, got)
		}
	}
}
