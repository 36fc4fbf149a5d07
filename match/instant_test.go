package match_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"followfeed/follow"
)

// instantRows is what instant_follows holds, as "user key cross repl".
func (e *env) instantRows() []string {
	return e.rows(`SELECT user_id || ' ' || key || ' ' || include_cross_lists || ' ' || include_replacements FROM instant_follows ORDER BY 1`)
}

// wantInstantRows is what it should hold, computed here from the tables
// themselves: the follows of the users with instant alerts or an enabled
// instant channel.
func (e *env) wantInstantRows() []string {
	return e.rows(`
		SELECT f.user_id || ' ' || f.key || ' ' || f.include_cross_lists || ' ' || f.include_replacements FROM follows f
		WHERE f.user_id IN (SELECT user_id FROM digest_schedules WHERE frequency = 'instant')
		   OR f.user_id IN (SELECT user_id FROM channels WHERE mode = 'instant' AND enabled)
		ORDER BY 1`)
}

// rows runs q, whose rows are one text column each.
func (e *env) rows(q string, args ...any) []string {
	e.t.Helper()
	rows, err := e.db.Pool.Query(e.ctx, q, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Pool.Exec(e.ctx, q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// TestInstantFollowsMirrorTheInstantUsers: after every kind of change
// to follows, to instant alerts and to channels (including a user's
// deletion), instant_follows holds exactly the follows of the users with
// instant delivery, with their options: the match job's audience is right
// whoever wrote the change.
func TestInstantFollowsMirrorTheInstantUsers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	yes, no := true, false
	a, b, c := e.user("a"), e.user("b"), e.user("c") // user() gives instant alerts
	e.exec(`UPDATE digest_schedules SET frequency = 'daily' WHERE user_id = $1`, c)
	cat, _ := follow.ParseTarget("category", "cs.LG")
	steps := []struct {
		name string
		do   func()
	}{
		{"follows of instant users", func() {
			e.follow(a, "category", "cs.LG", follow.Options{})
			e.follow(a, "researcher", "s2:1", follow.Options{IncludeReplacements: &yes})
			e.follow(b, "category", "cs.LG", follow.Options{IncludeCrossLists: &no})
			e.follow(c, "category", "cs.LG", follow.Options{})
		}},
		{"options changed", func() {
			e.follow(a, "category", "cs.LG", follow.Options{IncludeCrossLists: &no, IncludeReplacements: &yes})
		}},
		{"unfollow", func() {
			if _, err := e.follows.Unfollow(e.ctx, b, cat); err != nil {
				t.Fatal(err)
			}
		}},
		{"alerts stop", func() { e.exec(`UPDATE digest_schedules SET frequency = 'weekly' WHERE user_id = $1`, a) }},
		{"an unrelated update", func() { e.exec(`UPDATE digest_schedules SET watermark = watermark + 1, instant_due_at = now()`) }},
		{"alerts start", func() { e.exec(`UPDATE digest_schedules SET frequency = 'instant' WHERE user_id = $1`, c) }},
		{"an instant channel", func() {
			e.exec(`INSERT INTO channels (user_id, type, url, mode) VALUES ($1, 'webhook', 'https://hooks.example/a', 'instant')`, a)
		}},
		{"its user's alerts stop too: the channel keeps them", func() {
			e.exec(`UPDATE digest_schedules SET frequency = 'off' WHERE user_id IN ($1, $2)`, a, c)
		}},
		{"the channel disabled", func() { e.exec(`UPDATE channels SET enabled = false WHERE user_id = $1`, a) }},
		{"enabled, then daily", func() {
			e.exec(`UPDATE channels SET enabled = true WHERE user_id = $1`, a)
			e.exec(`UPDATE channels SET mode = 'daily' WHERE user_id = $1`, a)
		}},
		{"instant again, then deleted", func() {
			e.exec(`UPDATE channels SET mode = 'instant' WHERE user_id = $1`, a)
			e.exec(`DELETE FROM channels WHERE user_id = $1`, a)
		}},
		{"schedules inserted and deleted in bulk", func() {
			e.exec(`DELETE FROM digest_schedules`)
			e.exec(`INSERT INTO digest_schedules (user_id, frequency) SELECT id, 'instant' FROM users`)
		}},
		{"a user deleted", func() { e.exec(`DELETE FROM users WHERE id = $1`, a) }},
	}
	for _, s := range steps {
		s.do()
		got, want := e.instantRows(), e.wantInstantRows()
		if !slices.Equal(got, want) {
			t.Errorf("after %s: instant_follows %q, want %q", s.name, got, want)
		}
	}
	if got := e.instantRows(); len(got) == 0 {
		t.Error("nothing left to compare: the steps should end with instant users' follows")
	}
}

// TestInstantFollowsUnderConcurrentChanges: follows written while their
// user's instant delivery starts and stops, from other connections at
// the same time, still leave instant_follows exactly the instant users'
// follows (the triggers' lock on the user orders them).
func TestInstantFollowsUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var users []int64
	for i := range 4 {
		users = append(users, e.user(fmt.Sprintf("r%d", i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, u := range users {
		wg.Add(2)
		go func() { // follows and unfollows
			defer wg.Done()
			for i := range 30 {
				tg, err := follow.ParseTarget("researcher", fmt.Sprintf("s2:%d", 100+i%7))
				if err != nil {
					errs <- err
					return
				}
				if i%3 == 2 {
					_, err = e.follows.Unfollow(e.ctx, u, tg)
				} else {
					_, _, err = e.follows.Follow(e.ctx, u, tg, follow.Options{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // instant alerts on and off
			defer wg.Done()
			for i := range 30 {
				f := []string{"instant", "daily"}[i%2]
				if _, err := e.db.Pool.Exec(e.ctx, `UPDATE digest_schedules SET frequency = $2 WHERE user_id = $1`, u, f); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every user ends on daily; turn half back on so both branches count.
	e.exec(`UPDATE digest_schedules SET frequency = 'instant' WHERE user_id = ANY($1)`, users[:2])
	if got, want := e.instantRows(), e.wantInstantRows(); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("instant_follows %q, want %q (non-empty)", got, want)
	}
}
