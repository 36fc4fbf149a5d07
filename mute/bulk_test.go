package mute_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/testdb"
	"followfeed/mute"
)

// PutMany writes many users' mutes of every kind in one statement, as
// Create would store them (List reads them back with their scopes),
// skips a mute a user already has, and RemoveAll takes every mute off.
func TestPutManyAndRemoveAll(t *testing.T) {
	t.Parallel()
	db, ctx := testdb.New(t), context.Background()
	a, b := newUser(t, db, "a"), newUser(t, db, "b")
	spec := func(in mute.Input) mute.Spec {
		s, err := mute.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	person := spec(mute.Input{Researcher: ptr("openalex:A5023888391"), HasFollow: true, FollowKind: "category", FollowID: "cs.LG"})
	words := spec(mute.Input{Query: ptr(`abs:"Dark  Matter"`)})
	cross := spec(mute.Input{Category: ptr("cs.AI"), CrossLists: ptr(false)})
	put := func(ms []mute.Bulk) int {
		var n int
		if err := db.InTx(ctx, func(tx pgx.Tx) (err error) {
			n, err = mute.PutMany(ctx, tx, ms)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := put([]mute.Bulk{{a, person}, {a, words}, {a, cross}, {b, words}}); n != 4 {
		t.Fatalf("PutMany wrote %d, want 4", n)
	}
	if n := put([]mute.Bulk{{a, words}, {b, cross}}); n != 1 {
		t.Errorf("PutMany again wrote %d, want 1 (a's words exist)", n)
	}
	svc := mute.NewService(db)
	ms, err := svc.List(ctx, a)
	if err != nil || len(ms) != 3 {
		t.Fatalf("a's mutes: %+v %v", ms, err)
	}
	if ms[0].Key() != "researcher:openalex:A5023888391" || ms[0].Scope == nil || ms[0].Scope.Key() != "category:cs.LG" || ms[0].Kind() != mute.Researcher ||
		ms[1].Key() != `query:abs:"dark matter"` || ms[1].Scope != nil || ms[1].Kind() != mute.Query ||
		ms[2].Key() != "category:cs.AI" || ms[2].Kind() != mute.Category {
		t.Errorf("a's mutes as stored: %+v", ms)
	}
	var removed int
	if err := db.InTx(ctx, func(tx pgx.Tx) (err error) {
		removed, err = mute.RemoveAll(ctx, tx)
		return err
	}); err != nil || removed != 5 {
		t.Fatalf("RemoveAll: %d, %v", removed, err)
	}
	for _, u := range []int64{a, b} {
		if ms, err := svc.List(ctx, u); err != nil || len(ms) != 0 {
			t.Errorf("user %d's mutes after RemoveAll: %+v %v", u, ms, err)
		}
	}
}
