package fediverse_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/fediverse"
)

// TestBulkLoadAndRemoveAll: the lab's loader writes actors, inboxes (ids in
// the order given) and followers as a Follow would leave them, counted by
// ReadStats; RemoveAll leaves no fediverse row.
func TestBulkLoadAndRemoveAll(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inboxes := []string{"https://one.example/inbox", "https://two.example/inbox"}
	var ids []int64
	err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		ids, err = fediverse.BulkLoad(e.ctx, tx, []string{"category:cs.LG", "category:cs.AI"}, 0, inboxes, []fediverse.BulkFollower{
			{ActorKey: "category:cs.LG", Follower: "https://one.example/users/a", Inbox: 0},
			{ActorKey: "category:cs.AI", Follower: "https://one.example/users/a", Inbox: 0},
			{ActorKey: "category:cs.LG", Follower: "https://two.example/users/b", Inbox: 1},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || e.count(`SELECT count(*) FROM ap_inboxes WHERE id = $1 AND url = $2 AND host = 'two.example'`, ids[1], inboxes[1]) != 1 {
		t.Fatalf("inbox ids %v do not follow the order given", ids)
	}
	st, err := e.svc.ReadStats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Followers != 3 || st.Actors != 2 || st.Inboxes != 2 {
		t.Errorf("after the load: %+v", st)
	}
	err = e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		_, err := fediverse.BulkLoad(e.ctx, tx, nil, 0, []string{"not a url"}, nil)
		return err
	})
	if err == nil {
		t.Error("an inbox without a host was loaded")
	}
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error { return fediverse.RemoveAll(e.ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"ap_actors", "ap_inboxes", "ap_followers", "ap_keys"} {
		if n := e.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%d rows left in %s", n, table)
		}
	}
}
