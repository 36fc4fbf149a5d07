package mute_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/mute"
)

func newUser(t *testing.T, db *database.DB, sub string) int64 {
	t.Helper()
	u, err := account.NewUsers(db).Ensure(context.Background(), &auth.Claims{Subject: sub})
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

func ptr[T any](v T) *T { return &v }

// TestParse: every kind normalised, and every bad input an Invalid error
// naming the field, a query's with the parser's position.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    mute.Input
		want  string // What.Key(), or the error's field
		scope string
	}{
		{in: mute.Input{Researcher: ptr("https://openalex.org/A5023888391")}, want: "researcher:openalex:A5023888391"},
		{in: mute.Input{Query: ptr(`abs:"Dark  Matter"`)}, want: `query:abs:"dark matter"`},
		{in: mute.Input{Category: ptr("cs.lg"), CrossLists: ptr(false)}, want: "category:cs.LG"},
		{in: mute.Input{Category: ptr("cs"), CrossLists: ptr(false)}, want: "archive:cs"},
		{in: mute.Input{Researcher: ptr("orcid:0000-0002-1825-0097"), HasFollow: true, FollowKind: "category", FollowID: "cs.LG"},
			want: "researcher:orcid:0000-0002-1825-0097", scope: "category:cs.LG"},
	} {
		s, err := mute.Parse(c.in)
		if err != nil {
			t.Errorf("%+v: %v", c.in, err)
			continue
		}
		if s.What.Key() != c.want {
			t.Errorf("%+v: key %q, want %q", c.in, s.What.Key(), c.want)
		}
		if got := ""; s.Scope != nil {
			got = s.Scope.Key()
			if got != c.scope {
				t.Errorf("%+v: scope %q, want %q", c.in, got, c.scope)
			}
		} else if c.scope != "" {
			t.Errorf("%+v: no scope, want %q", c.in, c.scope)
		}
	}
	for _, c := range []struct {
		in    mute.Input
		field string
	}{
		{mute.Input{}, "researcher"},
		{mute.Input{Researcher: ptr("x"), Query: ptr("y")}, "researcher"},
		{mute.Input{Researcher: ptr("nobody:123")}, "researcher"},
		{mute.Input{Query: ptr(`abs:"dark matter`)}, "query"},
		{mute.Input{Query: ptr(`the`)}, "query"},
		{mute.Input{Category: ptr("cs.LG")}, "cross_lists"},
		{mute.Input{Category: ptr("cs.LG"), CrossLists: ptr(true)}, "cross_lists"},
		{mute.Input{Category: ptr("cs.NOPE"), CrossLists: ptr(false)}, "category"},
		{mute.Input{Query: ptr("survey"), CrossLists: ptr(false)}, "cross_lists"},
		{mute.Input{Query: ptr("survey"), HasFollow: true, FollowKind: "planet", FollowID: "x"}, "follow.kind"},
		{mute.Input{Query: ptr("survey"), HasFollow: true, FollowKind: "category", FollowID: ""}, "follow.id"},
	} {
		_, err := mute.Parse(c.in)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Field != c.field {
			t.Errorf("%+v: %v, want an Invalid error on %q", c.in, err, c.field)
		}
	}
	_, err := mute.Parse(mute.Input{Query: ptr(`abs:"dark matter`)})
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Details) != 1 || ae.Details[0].Index == 0 || !strings.Contains(ae.Message, "at character") {
		t.Errorf("a query that does not parse: %v, want the parser's position", err)
	}
}

// TestCreateListDelete: a mute is created once (the same again is the
// same mute), listed in order, scoped only to a follow the user has,
// deleted by its owner only (another user's: not found), and the
// user's feeds get a new version on each change.
func TestCreateListDelete(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	ada, bob := newUser(t, db, "ada"), newUser(t, db, "bob")
	svc := mute.NewService(db)
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	if _, _, err := follow.NewService(db).Follow(ctx, ada, lg, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	version := func() (v int64) {
		if err := db.Pool.QueryRow(ctx, `SELECT version FROM user_feeds WHERE user_id = $1`, ada).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	person, _ := mute.Parse(mute.Input{Researcher: ptr("openalex:A1"), HasFollow: true, FollowKind: "category", FollowID: "cs.LG"})
	m, created, err := svc.Create(ctx, ada, person)
	if err != nil || !created || m.ID == 0 || m.Scope == nil || *m.Scope != lg || m.Kind() != mute.Researcher {
		t.Fatalf("Create: %+v %v %v", m, created, err)
	}
	if v := version(); v == v0 {
		t.Errorf("the feed's version did not change with a new mute")
	}
	again, created, err := svc.Create(ctx, ada, person)
	if err != nil || created || again.ID != m.ID {
		t.Errorf("the same mute again: %+v %v %v", again, created, err)
	}
	unscoped := mute.Spec{What: person.What}
	m2, created, err := svc.Create(ctx, ada, unscoped)
	if err != nil || !created || m2.ID == m.ID {
		t.Errorf("the same researcher for every follow is another mute: %+v %v %v", m2, created, err)
	}
	if _, _, err := svc.Create(ctx, ada, unscoped); err != nil {
		t.Errorf("an unscoped mute again: %v", err)
	}
	_, _, err = svc.Create(ctx, bob, person)
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.Invalid || ae.Field != "follow" {
		t.Errorf("a scope bob does not follow: %v, want Invalid on follow", err)
	}
	ms, err := svc.List(ctx, ada)
	if err != nil || len(ms) != 2 || ms[0].ID != m.ID || ms[1].ID != m2.ID || ms[1].Scope != nil || ms[0].What != person.What {
		t.Errorf("List: %+v %v", ms, err)
	}
	if ms, err := svc.List(ctx, bob); err != nil || ms == nil || len(ms) != 0 {
		t.Errorf("bob's List: %+v %v", ms, err)
	}
	if err := svc.Delete(ctx, bob, m.ID); !errors.Is(err, database.ErrNotFound) || apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("bob deletes ada's mute: %v, want not found", err)
	}
	v1 := version()
	if err := svc.Delete(ctx, ada, m.ID); err != nil {
		t.Fatal(err)
	}
	if version() == v1 {
		t.Errorf("the feed's version did not change with a removed mute")
	}
	if err := svc.Delete(ctx, ada, m.ID); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("deleting it again: %v, want not found", err)
	}
	if ms, _ := svc.List(ctx, ada); len(ms) != 1 || ms[0].ID != m2.ID {
		t.Errorf("after the delete: %+v", ms)
	}
}

// TestLimit: MaxPerUser mutes and no more, even when requests race; the
// refusal is Invalid and names the limit.
func TestLimit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	ada := newUser(t, db, "ada")
	svc := mute.NewService(db)
	for i := range mute.MaxPerUser - 5 {
		if _, _, err := svc.Create(ctx, ada, mute.Spec{What: follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("host:%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			_, _, errs[i] = svc.Create(ctx, ada, mute.Spec{What: follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("host:%d", 1000+i)}})
		})
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			ae, ok := apperr.As(err)
			if !ok || ae.Code != apperr.Invalid || !strings.Contains(ae.Message, fmt.Sprint(mute.MaxPerUser)) {
				t.Errorf("over the limit: %v", err)
			}
			refused++
		}
	}
	if ms, _ := svc.List(ctx, ada); len(ms) != mute.MaxPerUser || refused != 5 {
		t.Errorf("%d mutes, %d refused; want %d and 5", len(ms), refused, mute.MaxPerUser)
	}
	// The same mute again is no new mute: allowed at the limit.
	if _, created, err := svc.Create(ctx, ada, mute.Spec{What: follow.Target{Kind: follow.Researcher, ID: "host:0"}}); err != nil || created {
		t.Errorf("an existing mute at the limit: %v %v", created, err)
	}
}

// TestEraseUser: the erasure's hook removes the user's mutes and no
// one else's.
func TestEraseUser(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	ada, bob := newUser(t, db, "ada"), newUser(t, db, "bob")
	svc := mute.NewService(db)
	for _, u := range []int64{ada, bob} {
		if _, _, err := svc.Create(ctx, u, mute.Spec{What: follow.Target{Kind: follow.Query, ID: "survey"}}); err != nil {
			t.Fatal(err)
		}
	}
	users := account.NewUsers(db)
	users.OnErase(mute.EraseUser)
	if erased, err := users.Erase(ctx, ada); err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}
	var n, m int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE user_id = $1), count(*) FILTER (WHERE user_id = $2) FROM mutes`, ada, bob).Scan(&n, &m); err != nil || n != 0 || m != 1 {
		t.Errorf("after ada's erasure: ada %d mutes, bob %d (%v); want 0 and 1", n, m, err)
	}
}
