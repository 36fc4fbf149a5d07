package follow_test

import (
	"context"
	"strconv"
	"testing"

	"followfeed/account"
	"followfeed/follow"
	"followfeed/internal/testdb"
)

// TestEraseUserDropsTheFollowerCounts: erasing a user (account's erasure
// with follow's hook) removes their follows and their share of each
// follower count in the erasure's commit, and their instant_follows rows
// with them (migration 00020's triggers); another user's follows and
// counts stay.
func TestEraseUserDropsTheFollowerCounts(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	ada, bob := newUser(t, db, "ada"), newUser(t, db, "bob")
	svc := follow.NewService(db)
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	person := follow.Target{Kind: follow.Researcher, ID: "orcid:0000-0002-1825-0097"}
	for _, u := range []int64{ada, bob} {
		if _, _, err := svc.Follow(ctx, u, lg, follow.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := svc.Follow(ctx, ada, person, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	// Instant delivery for both (notify's table, set here as the test's
	// fixture): the triggers copy their follows into instant_follows.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO digest_schedules (user_id, frequency) VALUES ($1, 'instant'), ($2, 'instant')`, ada, bob); err != nil {
		t.Fatal(err)
	}
	users := account.NewUsers(db)
	users.OnErase(follow.EraseUser)
	if erased, err := users.Erase(ctx, ada); err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}
	for _, c := range []struct {
		sql  string
		want int
	}{
		{`SELECT count(*) FROM follows WHERE user_id = ` + itoa(ada), 0},
		{`SELECT count(*) FROM instant_follows WHERE user_id = ` + itoa(ada), 0},
		{`SELECT followers FROM follow_counts WHERE key = 'category:cs.LG'`, 1},
		{`SELECT followers FROM follow_counts WHERE key = '` + person.Key() + `'`, 0},
		{`SELECT count(*) FROM follows WHERE user_id = ` + itoa(bob), 1},
		{`SELECT count(*) FROM instant_follows WHERE user_id = ` + itoa(bob), 1},
	} {
		var n int
		if err := db.Pool.QueryRow(ctx, c.sql).Scan(&n); err != nil || n != c.want {
			t.Errorf("%s: %d (%v), want %d", c.sql, n, err, c.want)
		}
	}
	st, err := svc.Status(ctx, lg, 0)
	if err != nil || st.Followers != 1 {
		t.Errorf("cs.LG's followers after the erasure: %+v %v", st, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
