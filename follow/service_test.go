package follow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/internal/testdb"
	"followfeed/internal/testpaper"
	"followfeed/paper"

	"github.com/jackc/pgx/v5"
)

func newUser(t *testing.T, db *database.DB, sub string) int64 {
	t.Helper()
	u, err := account.NewUsers(db).Ensure(context.Background(), &auth.Claims{Subject: sub})
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

func TestFollowLimit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	uid := newUser(t, db, "collector")
	// Fill up to the limit directly: 4,999 follows, then two through the
	// service (the last allowed, then one too many).
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO follows (user_id, key, kind, target)
		SELECT $1, 'researcher:s2:' || g, 'researcher', 's2:' || g FROM generate_series(1, $2) g`,
		uid, follow.MaxFollows-1); err != nil {
		t.Fatal(err)
	}
	svc := follow.NewService(db)
	if _, created, err := svc.Follow(ctx, uid, follow.Target{Kind: follow.Category, ID: "cs.LG"}, follow.Options{}); err != nil || !created {
		t.Fatalf("the 5,000th follow: %v", err)
	}
	_, _, err := svc.Follow(ctx, uid, follow.Target{Kind: follow.Category, ID: "cs.AI"}, follow.Options{})
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the 5,001st follow: want Conflict, got %v", err)
	}
	// Updating an existing follow at the limit is fine.
	label := "ML"
	if _, created, err := svc.Follow(ctx, uid, follow.Target{Kind: follow.Category, ID: "cs.LG"}, follow.Options{Label: &label}); err != nil || created {
		t.Fatalf("updating at the limit: created=%v err=%v", created, err)
	}
}

func TestFollowUnknownUser(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	_, _, err := follow.NewService(db).Follow(context.Background(), 999, follow.Target{Kind: follow.Category, ID: "cs.LG"}, follow.Options{})
	if !errors.Is(err, database.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestFollowBumpsTheFeedVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	uid := newUser(t, db, "bumper")
	version := func() int64 {
		var v int64
		db.Pool.QueryRow(ctx, `SELECT version FROM user_feeds WHERE user_id = $1`, uid).Scan(&v)
		return v
	}
	svc := follow.NewService(db)
	t0 := version()
	tgt := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	svc.Follow(ctx, uid, tgt, follow.Options{})
	t1 := version()
	svc.Unfollow(ctx, uid, tgt)
	t2 := version()
	svc.Unfollow(ctx, uid, tgt) // no change: no bump
	t3 := version()
	if !(t0 < t1 && t1 < t2 && t2 == t3) {
		t.Errorf("versions %d %d %d %d", t0, t1, t2, t3)
	}
}

// TestLabelsAreOneLineWithoutBidirectionalControls: a label kept U+202E
// and line separators, which reordered what the settings page, feed
// titles and digests showed around it (a security review finding).
func TestLabelsAreOneLineWithoutBidirectionalControls(t *testing.T) {
	t.Log("hostile: names")
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	uid := newUser(t, db, "labeller")
	svc := follow.NewService(db)
	label := " \u202Egpj.exe\u2028my  \u2066papers\u2069\u200F "
	f, _, err := svc.Follow(ctx, uid, follow.Target{Kind: follow.Category, ID: "cs.LG"}, follow.Options{Label: &label})
	if err != nil {
		t.Fatal(err)
	}
	if f.Label != "gpj.exe my papers" {
		t.Errorf("label stored as %q", f.Label)
	}
	tab := "a\tb"
	if _, _, err := svc.Follow(ctx, uid, follow.Target{Kind: follow.Category, ID: "cs.LG"}, follow.Options{Label: &tab}); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("a label with a tab: %v", err)
	}
}

// TestQueryFollowerCountsAreHiddenBelowFive: the public count of a
// query told anyone who asked that somebody tracks exactly that search
// when it was 1 (a review finding). Status hides a query's count below
// MinShownQueryFollowers; other kinds show theirs from one.
func TestQueryFollowerCountsAreHiddenBelowFive(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	svc := follow.NewService(db)
	q, err := follow.ParseTarget("query", `ti:"graph neural" AND cat:cs.LG`)
	if err != nil {
		t.Fatal(err)
	}
	cat := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	var first int64
	for i := 1; i <= follow.MinShownQueryFollowers; i++ {
		uid := newUser(t, db, fmt.Sprintf("tracker-%d", i))
		if i == 1 {
			first = uid
		}
		for _, tg := range []follow.Target{q, cat} {
			if _, _, err := svc.Follow(ctx, uid, tg, follow.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := svc.Status(ctx, q, first)
		if err != nil {
			t.Fatal(err)
		}
		hidden := i < follow.MinShownQueryFollowers
		if st.FollowersHidden != hidden || hidden && st.Followers != 0 || !hidden && st.Followers != int64(i) {
			t.Errorf("%d followers of a query: %+v", i, st)
		}
		if st.Following == nil || !*st.Following {
			t.Errorf("%d followers: the follower does not see that they follow", i)
		}
		if st, err := svc.Status(ctx, cat, 0); err != nil || st.FollowersHidden || st.Followers != int64(i) {
			t.Errorf("%d followers of a category: %+v %v", i, st, err)
		}
	}
}

// TestPaperFollowNamedByTitle: a paper follow is named by its arXiv id
// until the paper is stored, then by its title, shortened at a word, in
// every read of the follows (the follow's own write, Get, List, All, the
// batched read feeds use, AllMany, a Follow button's Status, Name, Names); its
// owner's label still wins, and the title is no match-reason label (the
// reasons are its events, which name the paper themselves).
func TestPaperFollowNamedByTitle(t *testing.T) {
	t.Parallel()
	store, db := testpaper.NewStore(t)
	ctx := context.Background()
	uid := newUser(t, db, "paper-follower")
	svc := follow.NewService(db)
	pt, err := follow.ParseTarget("paper", "arXiv:2611.01004")
	if err != nil {
		t.Fatal(err)
	}
	cat := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	if _, _, err := svc.Follow(ctx, uid, cat, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	f, _, err := svc.Follow(ctx, uid, pt, follow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reads := func() map[string]follow.Follow {
		t.Helper()
		out := map[string]follow.Follow{"Follow": f}
		var err error
		if out["Get"], err = svc.Get(ctx, uid, pt); err != nil {
			t.Fatal(err)
		}
		page, err := svc.List(ctx, uid, "", 10)
		if err != nil || len(page.Follows) != 2 {
			t.Fatalf("List: %v %v", page, err)
		}
		out["List"] = page.Follows[0]
		all, err := svc.All(ctx, uid)
		if err != nil || len(all) != 2 || all[1].Key() != cat.Key() {
			t.Fatalf("All: %v %v", all, err)
		}
		out["All"] = all[0]
		var b pgx.Batch
		follow.QueueAllIn(&b, uid, func(fs []follow.Follow) { out["QueueAllIn"] = fs[0] })
		if err := db.Pool.SendBatch(ctx, &b).Close(); err != nil {
			t.Fatal(err)
		}
		many, err := svc.AllMany(ctx, []int64{uid})
		if err != nil || len(many[uid]) != 2 {
			t.Fatalf("AllMany: %v %v", many, err)
		}
		out["AllMany"] = many[uid][0]
		st, err := svc.Status(ctx, pt, uid)
		if err != nil {
			t.Fatal(err)
		}
		out["Status"] = follow.Follow{Target: pt, Name: st.Name}
		name, err := svc.Name(ctx, pt)
		if err != nil {
			t.Fatal(err)
		}
		out["Name"] = follow.Follow{Target: pt, Name: name}
		names, err := svc.Names(ctx, []follow.Target{cat, pt})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := names[cat.Key()]; ok {
			t.Errorf("Names named the category (registry and catalog know no name for it): %v", names)
		}
		out["Names"] = follow.Follow{Target: pt, Name: names[pt.Key()]}
		for what, g := range out {
			if g.Key() != pt.Key() {
				t.Fatalf("%s read %s, want the paper follow", what, g.Key())
			}
		}
		return out
	}
	for what, g := range reads() {
		if g.DisplayName() != "arXiv:2611.01004" || g.OwnerName() != "arXiv:2611.01004" {
			t.Errorf("before the paper is stored, %s names it %q (owner %q), want its id", what, g.DisplayName(), g.OwnerName())
		}
	}

	title := "Sparse attention in very long sequences: a study of memory, compute and accuracy trade-offs at scale"
	if _, err := store.Ingest(ctx, []paper.Paper{testpaper.New("2611.01004v1", func(p *paper.Paper) { p.Title = title })}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	const want = "Sparse attention in very long sequences: a study of memory, compute and accuracy…"
	f.Name = title // what a fresh Follow call returns now
	for what, g := range reads() {
		if g.Name != title || g.DisplayName() != want || g.OwnerName() != want {
			t.Errorf("once stored, %s names it %q (owner %q, name %q), want %q", what, g.DisplayName(), g.OwnerName(), g.Name, want)
		}
	}
	if n := utf8.RuneCountInString(want); n > follow.MaxPaperName+1 {
		t.Fatalf("the shortened title has %d characters", n)
	}
	all, err := svc.All(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	if got := all[1].DisplayName(); got != "cs.LG — Machine Learning" {
		t.Errorf("the category follow is named %q", got)
	}
	if labels := follow.ReasonLabels(all); labels[pt.Key()] != "" {
		t.Errorf("the title became a reason label: %q", labels[pt.Key()])
	}
	label := "the sparse-attention paper"
	g, _, err := svc.Follow(ctx, uid, pt, follow.Options{Label: &label})
	if err != nil || g.Name != title || g.OwnerName() != label || g.DisplayName() != want {
		t.Fatalf("labelled: %+v %v", g, err)
	}
	all, _ = svc.All(ctx, uid)
	if labels := follow.ReasonLabels(all); labels[pt.Key()] != label {
		t.Errorf("the label is not the reason label: %q", labels[pt.Key()])
	}
}

// TestResearchersReachingAuthors: Researchers finds the user's researcher
// follows that reach a paper's author ids: a follow of the id itself, and
// a follow of another id of the same person (the identity registry's);
// not a follow of someone else, not another kind, not another user's.
func TestResearchersReachingAuthors(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	svc := follow.NewService(db)
	if _, err := identity.NewRegistry(db, svc).Put(ctx, []identity.Record{
		{Kind: follow.Researcher, IDs: []string{"host:1", "openalex:A5023888391"}, Name: "Mingzhi Wen"}}); err != nil {
		t.Fatal(err)
	}
	uid, other := newUser(t, db, "reader"), newUser(t, db, "other")
	for _, tg := range []follow.Target{{Kind: follow.Researcher, ID: "host:1"}, {Kind: follow.Researcher, ID: "orcid:0000-0002-1825-0097"},
		{Kind: follow.Researcher, ID: "s2:999"}, {Kind: follow.Category, ID: "cs.LG"}} {
		if _, _, err := svc.Follow(ctx, uid, tg, follow.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := svc.Follow(ctx, other, follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	ids := func(authorIDs ...string) []string {
		t.Helper()
		got, err := svc.Researchers(ctx, uid, authorIDs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.ID+"="+e.Name)
		}
		return out
	}
	for _, c := range []struct {
		authors []string
		want    string
	}{
		{[]string{"openalex:A5023888391", "orcid:0000-0002-1825-0097", "s2:1"}, "orcid:0000-0002-1825-0097=,host:1=Mingzhi Wen"},
		{[]string{"host:1"}, "host:1=Mingzhi Wen"},
		{[]string{"s2:1", "openalex:A1"}, ""},
		{nil, ""},
	} {
		if got := strings.Join(ids(c.authors...), ","); got != c.want {
			t.Errorf("Researchers(%v) = %q, want %q", c.authors, got, c.want)
		}
	}
}
