package inbox_test

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/inbox"
)

// PutStates writes many users' states in one statement (a paper marked
// again takes the new state), refuses a state that is not read or done
// without writing anything, and RemoveAllStates takes every user's
// states off, leaving their inbox settings alone.
func TestPutStatesAndRemoveAllStates(t *testing.T) {
	t.Parallel()
	f := setup(t, 3)
	other, err := account.NewUsers(f.db).Ensure(f.ctx, &auth.Claims{Subject: "other"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, a := range []string{"2611.00001", "2611.00002", "2611.00003"} {
		var id int64
		if err := f.db.Pool.QueryRow(f.ctx, `SELECT id FROM papers WHERE arxiv_id = $1`, a).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[a] = id
	}
	if err := f.ib.SetRememberOpened(f.ctx, f.uid, true); err != nil {
		t.Fatal(err)
	}
	put := func(marks []inbox.Mark) (int, error) {
		var n int
		err := f.db.InTx(f.ctx, func(tx pgx.Tx) (err error) {
			n, err = inbox.PutStates(f.ctx, tx, marks)
			return err
		})
		return n, err
	}
	if n, err := put([]inbox.Mark{{f.uid, ids["2611.00001"], inbox.Read}, {f.uid, ids["2611.00002"], inbox.Done}, {other.ID, ids["2611.00001"], inbox.Done}}); err != nil || n != 3 {
		t.Fatalf("PutStates: %d, %v", n, err)
	}
	if n, err := put([]inbox.Mark{{f.uid, ids["2611.00001"], inbox.Done}, {f.uid, ids["2611.00003"], inbox.Unread}}); err == nil || n != 0 {
		t.Errorf("a mark that is unread: %d, %v", n, err)
	}
	if n, err := put([]inbox.Mark{{f.uid, ids["2611.00001"], inbox.Done}}); err != nil || n != 1 {
		t.Errorf("marking a paper again: %d, %v", n, err)
	}
	if got := f.states(t); !slices.Equal(got, []string{"2611.00001=done", "2611.00002=done"}) {
		t.Errorf("the user's states: %v", got)
	}
	st, err := f.ib.Of(f.ctx, other.ID, []int64{ids["2611.00001"], ids["2611.00003"]})
	if err != nil || len(st) != 1 || st[ids["2611.00001"]] != inbox.Done {
		t.Errorf("the other user's states: %v %v", st, err)
	}

	var removed int
	if err := f.db.InTx(f.ctx, func(tx pgx.Tx) (err error) {
		removed, err = inbox.RemoveAllStates(f.ctx, tx)
		return err
	}); err != nil || removed != 3 {
		t.Fatalf("RemoveAllStates: %d, %v", removed, err)
	}
	if got := f.states(t); len(got) != 0 {
		t.Errorf("states left: %v", got)
	}
	if on, err := f.ib.RememberOpened(f.ctx, f.uid); err != nil || !on {
		t.Errorf("remember-opened after RemoveAllStates: %v %v", on, err)
	}
}
