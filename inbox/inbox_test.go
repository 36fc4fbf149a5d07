package inbox_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/internal/testdb"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/worker"
)

// fixture is a user following cs.LG with n papers of cs.LG stored one
// batch each (2611.00001 oldest).
type fixture struct {
	ctx    context.Context
	ib     *inbox.Service
	m      *match.Service
	papers *catalog.Store
	db     *database.DB
	uid    int64
}

func setup(t *testing.T, n int) *fixture {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ctx: context.Background(), m: match.NewService(db), papers: catalog.NewStore(db, worker.NewEnqueuer(ins)), db: db}
	f.ib = inbox.New(db, f.m)
	u, err := account.NewUsers(db).Ensure(f.ctx, &auth.Claims{Subject: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	f.uid = u.ID
	lg, _ := follow.ParseTarget("category", "cs.LG")
	if _, _, err := follow.NewService(db).Follow(f.ctx, f.uid, lg, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		f.ingest(t, fmt.Sprintf("2611.%05d", i))
	}
	return f
}

func (f *fixture) ingest(t *testing.T, id string) {
	t.Helper()
	p := paper.Paper{ArxivID: id, Title: "Paper " + id, PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"},
		Authors: []paper.Author{{Name: "Ann Author"}}}
	if _, err := f.papers.Ingest(f.ctx, []paper.Paper{p}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
}

// states lists the user's rows as arXiv id=state, oldest paper first.
func (f *fixture) states(t *testing.T) []string {
	t.Helper()
	es, err := f.ib.All(f.ctx, f.uid)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.ArxivID+"="+string(e.State))
	}
	slices.Sort(out)
	return out
}

// Set writes, changes and (with Unread) deletes the user's row; an id
// that is not one, a state that is not one and a paper not stored are
// refused, naming what is wrong.
func TestSet(t *testing.T) {
	t.Parallel()
	f := setup(t, 2)
	for _, st := range []inbox.State{inbox.Read, inbox.Done} {
		e, err := f.ib.Set(f.ctx, f.uid, "arXiv:2611.00001v3", st)
		if err != nil || e.ArxivID != "2611.00001" || e.State != st || e.Title != "Paper 2611.00001" || e.ChangedAt.IsZero() {
			t.Fatalf("Set %s: %+v %v", st, e, err)
		}
	}
	if got := f.states(t); !slices.Equal(got, []string{"2611.00001=done"}) {
		t.Errorf("after read then done: %v", got)
	}
	if _, err := f.ib.Set(f.ctx, f.uid, "2611.00001", inbox.Unread); err != nil {
		t.Fatal(err)
	}
	if got := f.states(t); len(got) != 0 {
		t.Errorf("after unread: %v", got)
	}
	if _, err := inbox.ParseState("seen"); !isField(err, apperr.Invalid, "state") {
		t.Errorf("ParseState(seen): %v", err)
	}
	if st, err := inbox.ParseState(" Done "); err != nil || st != inbox.Done {
		t.Errorf("ParseState(Done): %v %v", st, err)
	}
	if _, err := f.ib.Set(f.ctx, f.uid, "no-id", inbox.Read); !isField(err, apperr.Invalid, "arxiv_id") {
		t.Errorf("a bad id: %v", err)
	}
	if _, err := f.ib.Set(f.ctx, f.uid, "2611.99999", inbox.Read); !isField(err, apperr.NotFound, "") {
		t.Errorf("a paper not stored: %v", err)
	}
}

func isField(err error, code apperr.Code, field string) bool {
	var e *apperr.Error
	return errors.As(err, &e) && e.Code == code && e.Field == field
}

// MarkAllRead marks the user's unread matched papers read up to the
// seq given, leaves done papers done and later papers unread.
func TestMarkAllRead(t *testing.T) {
	t.Parallel()
	f := setup(t, 4)
	if _, err := f.ib.Set(f.ctx, f.uid, "2611.00002", inbox.Done); err != nil {
		t.Fatal(err)
	}
	upTo, err := f.papers.HighSeq(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.ingest(t, "2611.00005")
	n, err := f.ib.MarkAllRead(f.ctx, f.uid, nil, upTo)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("marked %d, want 3", n)
	}
	if want := []string{"2611.00001=read", "2611.00002=done", "2611.00003=read", "2611.00004=read"}; !slices.Equal(f.states(t), want) {
		t.Errorf("states %v, want %v", f.states(t), want)
	}
	// Up to now, of one follow: the later paper too.
	lg, _ := follow.ParseTarget("category", "cs.LG")
	if n, err := f.ib.MarkAllRead(f.ctx, f.uid, &lg, 0); err != nil || n != 1 {
		t.Errorf("mark all read of cs.LG up to now: %d %v, want 1", n, err)
	}
}

// List pages the user's papers newest first by keyset (a paper matched
// between pages does not shift them) and filters by state.
func TestList(t *testing.T) {
	t.Parallel()
	f := setup(t, 5)
	if _, err := f.ib.Set(f.ctx, f.uid, "2611.00004", inbox.Done); err != nil {
		t.Fatal(err)
	}
	ids := func(p inbox.Page) (out []string) {
		for _, it := range p.Items {
			out = append(out, it.ArxivID+"="+string(it.State))
		}
		return out
	}
	p1, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Limit: 2})
	if err != nil || !slices.Equal(ids(p1), []string{"2611.00005=unread", "2611.00004=done"}) || p1.Next == "" {
		t.Fatalf("first page: %v %q %v", ids(p1), p1.Next, err)
	}
	f.ingest(t, "2611.00006")
	p2, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Limit: 2, Cursor: p1.Next})
	if err != nil || !slices.Equal(ids(p2), []string{"2611.00003=unread", "2611.00002=unread"}) || p2.Next == "" {
		t.Fatalf("second page after a new paper: %v %q %v", ids(p2), p2.Next, err)
	}
	// More new papers than a page: the list goes on where it was, to its
	// end (the selection reaches past the cursor however many arrived).
	for _, id := range []string{"2611.00007", "2611.00008", "2611.00009"} {
		f.ingest(t, id)
	}
	p3, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Limit: 2, Cursor: p2.Next})
	if err != nil || !slices.Equal(ids(p3), []string{"2611.00001=unread"}) || p3.Next != "" {
		t.Fatalf("third page after more new papers: %v %q %v", ids(p3), p3.Next, err)
	}
	un, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{State: inbox.Unread, Limit: 6})
	if err != nil || !slices.Equal(ids(un), []string{"2611.00009=unread", "2611.00008=unread", "2611.00007=unread", "2611.00006=unread", "2611.00005=unread", "2611.00003=unread"}) {
		t.Errorf("unread: %v %v", ids(un), err)
	}
	if _, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Cursor: "bm90IGEgY3Vyc29y"}); !isField(err, apperr.Invalid, "cursor") {
		t.Errorf("a cursor List did not make: %v", err)
	}
}

// TestBestPagesListEachPaperOnce: best first, each page lists the best of
// the papers the earlier pages did not (its cursor names them), so a
// reader who marks each page read as they go, which takes those papers
// out of the unread list below the next cursor, still meets every paper
// once; a cursor of the earlier form (by position) is still read.
func TestBestPagesListEachPaperOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, 11)
	ins, err := worker.NewInserter(f.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.ib.RankWith(ranking.New(ranking.Config{DB: f.db, Enqueuer: worker.NewEnqueuer(ins), Matcher: f.m}))
	best := func(state inbox.State, cursor string) inbox.Page {
		t.Helper()
		p, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Best: true, State: state, Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	seen := map[string]int{}
	pages := 0
	for p := best(inbox.Unread, ""); ; p = best(inbox.Unread, p.Next) {
		pages++
		for _, it := range p.Items {
			seen[it.ArxivID]++
			if _, err := f.ib.Set(f.ctx, f.uid, it.ArxivID, inbox.Read); err != nil {
				t.Fatal(err)
			}
		}
		if p.Next == "" || pages > 10 {
			break
		}
	}
	if len(seen) != 11 || pages != 4 {
		t.Errorf("marking each page read: %d pages met %d of 11 papers: %v", pages, len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	// Every paper is read now: the whole list, best first, by the
	// earlier cursor form and by the one it answers with.
	all := best("", "")
	var order []string
	for p := all; ; p = best("", p.Next) {
		for _, it := range p.Items {
			order = append(order, it.ArxivID)
		}
		if p.Next == "" {
			break
		}
	}
	byPosition := best("", base64.RawURLEncoding.EncodeToString([]byte("b.3")))
	next := best("", byPosition.Next)
	var got []string
	for _, it := range append(byPosition.Items, next.Items...) {
		got = append(got, it.ArxivID)
	}
	if len(order) != 11 || !slices.Equal(got, order[3:9]) {
		t.Errorf("from a cursor by position (b.3) and on: %v, want %v of %v", got, order[3:min(9, len(order))], order)
	}
	for _, c := range []string{"cy4", base64.RawURLEncoding.EncodeToString([]byte("s.")), base64.RawURLEncoding.EncodeToString([]byte("s.\x00"))} {
		if _, err := f.ib.List(f.ctx, f.uid, inbox.ListQuery{Best: true, Cursor: c}); !isField(err, apperr.Invalid, "cursor") {
			t.Errorf("best-first cursor %q: %v, want a 422 naming cursor", c, err)
		}
	}
}
