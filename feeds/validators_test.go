package feeds

import (
	"context"
	"errors"
	"testing"
	"time"

	"followfeed/match"
)

// heads is the head function a Validators is built over (in the service,
// match.Service.Head: one statement on the primary), answering what the
// test set for each user and counting the calls.
type heads struct {
	now   map[int64]match.Head
	err   error
	calls int
}

func (h *heads) head(_ context.Context, userID int64) (match.Head, error) {
	h.calls++
	if h.err != nil {
		return match.Head{}, h.err
	}
	return h.now[userID], nil
}

var (
	t0 = time.Date(2026, 3, 10, 20, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

// TestValidatorsCacheByVersionAndHighSeq: a validator is reused exactly
// while the request's state (the feed row's version and the high seq, from
// the token lookup) is the one it was computed at; a new version or a new
// high seq computes it again. Its Last-Modified is the later of the feed
// row's change and the newest row's arrival.
func TestValidatorsCacheByVersionAndHighSeq(t *testing.T) {
	h := &heads{now: map[int64]match.Head{7: {Version: 3, ChangedAt: t0, HighSeq: 100, Seq: 90, SeqAt: t1}}}
	v := NewValidators(h.head, DefaultValidatorEntries)
	ctx := context.Background()
	st := State{UserID: 7, Version: 3, ChangedAt: t0, HighSeq: 100}
	want := Validator{Version: 3, HighSeq: 100, Seq: 90, Modified: t1}

	get := func(st State, calls int, want Validator) {
		t.Helper()
		got, err := v.Get(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if !same(got, want) {
			t.Errorf("Get(%+v) = %+v, want %+v", st, got, want)
		}
		if h.calls != calls {
			t.Errorf("Get(%+v): %d head reads in all, want %d", st, h.calls, calls)
		}
	}
	get(st, 1, want) // computed
	get(st, 1, want) // cached
	get(st, 1, want)
	if hits, misses := v.Stats(); hits != 2 || misses != 1 {
		t.Errorf("Stats = %d hits, %d misses; want 2, 1", hits, misses)
	}

	// Same version, the high seq moved (a batch of anybody's keys): the
	// head is read again, and its answer cached at the new high seq.
	h.now[7] = match.Head{Version: 3, ChangedAt: t0, HighSeq: 120, Seq: 115, SeqAt: t1.Add(time.Minute)}
	st.HighSeq = 120
	want = Validator{Version: 3, HighSeq: 120, Seq: 115, Modified: t1.Add(time.Minute)}
	get(st, 2, want)
	get(st, 2, want)

	// A new version (follows edited), the high seq unchanged.
	h.now[7] = match.Head{Version: 4, ChangedAt: t1.Add(2 * time.Minute), HighSeq: 120, Seq: 115, SeqAt: t1.Add(time.Minute)}
	st.Version, st.ChangedAt = 4, t1.Add(2*time.Minute)
	want = Validator{Version: 4, HighSeq: 120, Seq: 115, Modified: t1.Add(2 * time.Minute)}
	get(st, 3, want)
	get(st, 3, want)

	// Another user is another entry.
	h.now[8] = match.Head{Version: 1, ChangedAt: t0, HighSeq: 120}
	get(State{UserID: 8, Version: 1, ChangedAt: t0, HighSeq: 120}, 4, Validator{Version: 1, HighSeq: 120, Modified: t0})
	if v.Len() != 2 {
		t.Errorf("Len = %d, want 2", v.Len())
	}
}

// TestValidatorModified: Last-Modified is the later of the feed row's
// change (the request's on a hit, the head's on a miss) and the arrival of
// the newest row, or the feed row's change when that arrival is unknown.
func TestValidatorModified(t *testing.T) {
	for _, c := range []struct {
		name             string
		changedAt, seqAt time.Time
		want             time.Time
	}{
		{"the newest row arrived after the feed row changed", t0, t1, t1},
		{"the feed row changed after the newest row arrived", t1, t0, t1},
		{"the same instant", t0, t0, t0},
		{"the arrival unknown", t1, time.Time{}, t1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &heads{now: map[int64]match.Head{1: {Version: 1, ChangedAt: c.changedAt, HighSeq: 5, Seq: 5, SeqAt: c.seqAt}}}
			v := NewValidators(h.head, DefaultValidatorEntries)
			st := State{UserID: 1, Version: 1, ChangedAt: c.changedAt, HighSeq: 5}
			for i, what := range []string{"computed", "cached"} {
				got, err := v.Get(context.Background(), st)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Modified.Equal(c.want) || h.calls != 1 {
					t.Errorf("%s (get %d): Modified %v after %d head reads, want %v after 1", what, i+1, got.Modified, h.calls, c.want)
				}
			}
		})
	}
}

// TestValidatorsKeepTheNewerHead: a head read that answers an older state
// than the one cached (a slower read overtaken by a newer one) is returned
// to its caller but does not replace the entry; a newer one does.
func TestValidatorsKeepTheNewerHead(t *testing.T) {
	h := &heads{now: map[int64]match.Head{}}
	ctx := context.Background()
	cached := State{UserID: 1, Version: 5, ChangedAt: t0, HighSeq: 50}
	for _, c := range []struct {
		name     string
		head     match.Head
		replaces bool
	}{
		{"an older version", match.Head{Version: 4, ChangedAt: t0, HighSeq: 60, Seq: 55}, false},
		{"the same version at an older high seq", match.Head{Version: 5, ChangedAt: t0, HighSeq: 49, Seq: 40}, false},
		{"the same version at the same high seq", match.Head{Version: 5, ChangedAt: t0, HighSeq: 50, Seq: 40}, true},
		{"the same version at a newer high seq", match.Head{Version: 5, ChangedAt: t0, HighSeq: 51, Seq: 41}, true},
		{"a newer version at an older high seq", match.Head{Version: 6, ChangedAt: t1, HighSeq: 10, Seq: 9}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := NewValidators(h.head, DefaultValidatorEntries)
			h.now[1] = match.Head{Version: 5, ChangedAt: t0, HighSeq: 50, Seq: 40}
			if _, err := v.Get(ctx, cached); err != nil {
				t.Fatal(err)
			}
			// A state nothing is cached at: the head is read, and answers c.head.
			h.now[1] = c.head
			got, err := v.Get(ctx, State{UserID: 1, Version: 99, HighSeq: 99})
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != c.head.Version || got.HighSeq != c.head.HighSeq || got.Seq != c.head.Seq {
				t.Errorf("Get = %+v, want the head read %+v", got, c.head)
			}
			calls := h.calls
			newSt := State{UserID: 1, Version: c.head.Version, ChangedAt: c.head.ChangedAt, HighSeq: c.head.HighSeq}
			want := cached
			if c.replaces {
				want = newSt
			}
			if _, err := v.Get(ctx, want); err != nil || h.calls != calls {
				t.Errorf("the entry at %+v is not the cached one (%d more head reads, %v)", want, h.calls-calls, err)
			}
		})
	}
}

// TestValidatorsHeadError: a failed head read is returned and caches
// nothing: the next request reads again.
func TestValidatorsHeadError(t *testing.T) {
	boom := errors.New("primary unavailable")
	h := &heads{now: map[int64]match.Head{1: {Version: 1, HighSeq: 1}}, err: boom}
	v := NewValidators(h.head, DefaultValidatorEntries)
	st := State{UserID: 1, Version: 1, HighSeq: 1}
	if _, err := v.Get(context.Background(), st); !errors.Is(err, boom) {
		t.Fatalf("Get = %v, want %v", err, boom)
	}
	if v.Len() != 0 {
		t.Errorf("Len = %d after a failed read", v.Len())
	}
	h.err = nil
	if _, err := v.Get(context.Background(), st); err != nil || h.calls != 2 {
		t.Errorf("after the failure: %v, %d head reads, want 2", err, h.calls)
	}
	if hits, misses := v.Stats(); hits != 0 || misses != 2 {
		t.Errorf("Stats = %d hits, %d misses; want 0, 2", hits, misses)
	}
}

// TestValidatorsBounded: the cache holds at most its capacity (at least
// one user per shard); a full shard drops an entry for the new one, and
// the one dropped is read again when asked for.
func TestValidatorsBounded(t *testing.T) {
	h := &heads{now: map[int64]match.Head{}}
	for u := int64(1); u <= 1000; u++ {
		h.now[u] = match.Head{Version: 1, HighSeq: 1, Seq: u}
	}
	v := NewValidators(h.head, 128) // two users per shard
	ctx := context.Background()
	for u := int64(1); u <= 1000; u++ {
		if _, err := v.Get(ctx, State{UserID: u, Version: 1, HighSeq: 1}); err != nil {
			t.Fatal(err)
		}
		if n := v.Len(); n > 128 {
			t.Fatalf("Len = %d after %d users, capacity 128", n, u)
		}
	}
	if v.Len() != 128 {
		t.Errorf("Len = %d, want the capacity, 128", v.Len())
	}
	// A capacity under the shard count keeps one user per shard: users 1,
	// 65 and 129 share a shard.
	one := NewValidators(h.head, 10)
	for _, u := range []int64{1, 65, 129} {
		if _, err := one.Get(ctx, State{UserID: u, Version: 1, HighSeq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	calls := h.calls
	if one.Len() != 1 {
		t.Errorf("Len = %d, want 1", one.Len())
	}
	got, err := one.Get(ctx, State{UserID: 1, Version: 1, HighSeq: 1})
	if err != nil || got.Seq != 1 || h.calls != calls+1 {
		t.Errorf("a dropped user: %+v, %v, %d head reads, want it read again", got, err, h.calls-calls)
	}
}

// TestValidatorsAgreeAcrossProcesses: every input of the validator is
// fixed by (version, high seq), so a process that computes it and one that
// had it cached answer the same.
func TestValidatorsAgreeAcrossProcesses(t *testing.T) {
	h := &heads{now: map[int64]match.Head{3: {Version: 2, ChangedAt: t0, HighSeq: 70, Seq: 66, SeqAt: t1}}}
	st := State{UserID: 3, Version: 2, ChangedAt: t0, HighSeq: 70}
	a, b := NewValidators(h.head, DefaultValidatorEntries), NewValidators(h.head, DefaultValidatorEntries)
	ctx := context.Background()
	if _, err := b.Get(ctx, st); err != nil { // b caches it
		t.Fatal(err)
	}
	fromB, err := b.Get(ctx, st) // b's hit
	if err != nil {
		t.Fatal(err)
	}
	fromA, err := a.Get(ctx, st) // a's miss
	if err != nil {
		t.Fatal(err)
	}
	if !same(fromA, fromB) {
		t.Errorf("computed %+v, cached %+v", fromA, fromB)
	}
	if hits, _ := b.Stats(); hits != 1 {
		t.Errorf("b: %d hits, want 1", hits)
	}
}

func same(a, b Validator) bool {
	return a.Version == b.Version && a.HighSeq == b.HighSeq && a.Seq == b.Seq && a.Modified.Equal(b.Modified)
}
