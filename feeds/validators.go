package feeds

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"followfeed/match"
)

// DefaultValidatorEntries bounds a process's validator cache: 1M users in
// about 95 MiB (32 bytes an entry; with the maps' own overhead, 100 bytes
// measured at 1M entries).
const DefaultValidatorEntries = 1 << 20

// Validator is a private feed's validator: the ETag is made of Version and
// Seq (never HighSeq, which moves with every batch of anybody's keys), the
// Last-Modified is Modified. HighSeq is the high seq it was computed at:
// a replica renders the feed only when its snapshot has at least Version
// and HighSeq (feedAtLeast).
type Validator struct {
	Version, HighSeq, Seq int64
	Modified              time.Time
}

// Validators caches each user's validator for the (version, high seq) it
// was computed at, so that a conditional GET whose token lookup
// (Tokens.Lookup: the feed row and the high seq in one
// statement) finds both unchanged costs no further query. When either
// moved, the next request computes it again (match.Service.Head: one
// statement, a probe per followed key). Every input of the head is fixed
// by (version, high seq): what changes a feed without key rows bumps the
// version, key rows and their removal advance the high seq. So two
// processes, each with its own cache, give the same validator for the
// same state, whatever each has cached.
//
// Memory is bounded: at most the capacity given to NewValidators, in 64
// shards; a full shard drops an arbitrary entry (Go's map iteration order)
// for a new one.
type Validators struct {
	head         func(ctx context.Context, userID int64) (match.Head, error)
	perShard     int
	shards       [validatorShards]validatorShard
	hits, misses atomic.Uint64
}

const validatorShards = 64

type validatorShard struct {
	mu sync.Mutex
	m  map[int64]cachedHead
}

// cachedHead is one user's entry: 32 bytes.
type cachedHead struct {
	version, highSeq, seq int64
	seqAt                 int64 // unix µs of the head row's arrival, 0 unknown
}

// NewValidators returns a cache of at most capacity users' validators over
// head (match.Service.Head).
func NewValidators(head func(ctx context.Context, userID int64) (match.Head, error), capacity int) *Validators {
	v := &Validators{head: head, perShard: max(capacity/validatorShards, 1)}
	for i := range v.shards {
		v.shards[i].m = map[int64]cachedHead{}
	}
	return v
}

// Get returns the validator of st's user: the cached one when it was
// computed at st's version and high seq, else a fresh one (read on the
// primary, possibly at a newer version or high seq than st's: it is then
// the one cached and returned).
func (v *Validators) Get(ctx context.Context, st State) (Validator, error) {
	sh := &v.shards[uint64(st.UserID)%validatorShards]
	sh.mu.Lock()
	e, ok := sh.m[st.UserID]
	sh.mu.Unlock()
	if ok && e.version == st.Version && e.highSeq == st.HighSeq {
		v.hits.Add(1)
		return e.validator(st.ChangedAt), nil
	}
	v.misses.Add(1)
	h, err := v.head(ctx, st.UserID)
	if err != nil {
		return Validator{}, err
	}
	e = cachedHead{version: h.Version, highSeq: h.HighSeq, seq: h.Seq}
	if !h.SeqAt.IsZero() {
		e.seqAt = h.SeqAt.UnixMicro()
	}
	sh.mu.Lock()
	if old, ok := sh.m[st.UserID]; !ok || old.version < e.version || (old.version == e.version && old.highSeq <= e.highSeq) {
		if !ok && len(sh.m) >= v.perShard {
			for k := range sh.m {
				delete(sh.m, k)
				break
			}
		}
		sh.m[st.UserID] = e
	}
	sh.mu.Unlock()
	return e.validator(h.ChangedAt), nil
}

// validator is the entry's validator with the feed row's changedAt.
func (e cachedHead) validator(changedAt time.Time) Validator {
	mod := changedAt
	if e.seqAt != 0 {
		if at := time.UnixMicro(e.seqAt); at.After(mod) {
			mod = at
		}
	}
	return Validator{Version: e.version, HighSeq: e.highSeq, Seq: e.seq, Modified: mod}
}

// Len returns how many users' validators are cached.
func (v *Validators) Len() int {
	n := 0
	for i := range v.shards {
		sh := &v.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Stats returns how many Get calls found their validator cached (hits) and
// how many computed it (misses).
func (v *Validators) Stats() (hits, misses uint64) { return v.hits.Load(), v.misses.Load() }
