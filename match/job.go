package match

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// AffectedHook runs inside a match job's transaction with what the batch
// changed (notify schedules instant alerts, channels instant collections,
// feeds pings WebSub).
type AffectedHook func(ctx context.Context, tx pgx.Tx, res BatchResult) error

// OnAffected registers a hook for RunBatch. Register hooks before any job
// runs; the Service is not safe for registering concurrently with RunBatch.
func (s *Service) OnAffected(h AffectedHook) { s.hooks = append(s.hooks, h) }

// RunBatch is the match job: in one transaction it finds the users with
// instant delivery who have a new match among the keys in [fromSeq, toSeq]
// (AffectedUsers), runs the hooks, and calls finish (the worker completes
// its job there), so a retried job never repeats half of its effects. It writes no feed state:
// the rows themselves change the private feeds' validators (Head).
func (s *Service) RunBatch(ctx context.Context, fromSeq, toSeq int64, finish func(pgx.Tx) error) (BatchResult, error) {
	var res BatchResult
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.AffectedUsers(ctx, tx, fromSeq, toSeq)
		if err != nil {
			return err
		}
		for _, h := range s.hooks {
			if err := h(ctx, tx, res); err != nil {
				return err
			}
		}
		if finish != nil {
			return finish(tx)
		}
		return nil
	})
	return res, err
}

// BatchResult says what a match job found.
type BatchResult struct {
	FromSeq, ToSeq int64 // the batch's key rows
	Keys           int   // distinct keys in the batch
	// Users are the users with instant delivery (instant alerts or an
	// enabled instant channel: instant_follows) with a new match (a paper their
	// follows newly select: replacement rows only for follows that
	// include replacements, cross-lists only for those that include
	// cross-lists, and not a paper they said is not by the person they
	// follow), ascending.
	Users []int64
	// NewKeys are the batch's keys with a first match (not only
	// replacement rows), each once: the public feeds of these keys, and
	// of the other keys of their people and institutions, show a new
	// paper (feeds.Service.ChangedPublicURLs).
	NewKeys []string
	// ReplacedKeys are the batch's keys with replacement rows (a new
	// version of a paper that had the key), each once: the fediverse
	// updates the notes of those papers.
	ReplacedKeys []string
}

// AffectedUsers runs inside the match job: it takes the distinct keys written
// in seq range [fromSeq, toSeq] and finds, among the users with instant
// delivery, those with a follow that newly matches one of them (through the
// identity registry; honouring the cross-list and replacement options and
// "not this person" disputes, see BatchResult). It reads instant_follows
// (the follows of those users, kept by triggers, see migration 00020) by
// key: the cost grows with the number of distinct keys and their instant
// followers, never with papers × followers, nor with the followers without
// instant delivery.
func (s *Service) AffectedUsers(ctx context.Context, tx pgx.Tx, fromSeq, toSeq int64) (BatchResult, error) {
	res := BatchResult{FromSeq: fromSeq, ToSeq: toSeq}
	// JIT costs more than it saves in these statements. Custom plans: the
	// join's plan depends on how many keys and users the arrays hold,
	// which a generic plan, costed for ten, would get wrong once pgx's
	// cached statement had run five times.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off; SET LOCAL work_mem = '32MB'; SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return res, err
	}
	b, err := readBatch(ctx, tx, fromSeq, toSeq)
	if err != nil {
		return res, err
	}
	res.Keys = len(b.keys)
	for i, k := range b.keys {
		if b.primaryNew[i] || b.crossNew[i] {
			res.NewKeys = append(res.NewKeys, k)
		}
		if b.primaryReplaced[i] || b.crossReplaced[i] {
			res.ReplacedKeys = append(res.ReplacedKeys, k)
		}
	}
	if len(b.keys) == 0 {
		return res, nil
	}
	// Categories and archives first: a handful of keys that most users
	// follow (this domain's celebrities), so they alone match most of the
	// instant users a batch reaches. The many researcher (and other)
	// keys are then expanded through the registry (so a follow of any id
	// of the person is reached) and joined only for the instant users
	// the categories did not match; when there are none, not even the
	// registry is read.
	wide, narrow := b.split()
	aff := affected{}
	if err := aff.join(ctx, tx, wide, nil); err != nil {
		return res, fmt.Errorf("finding users affected by keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if len(narrow.keys) > 0 {
		rest, err := aff.unmatched(ctx, tx)
		if err != nil {
			return res, err
		}
		if len(rest) > 0 {
			x, err := narrow.expand(ctx, tx)
			if err != nil {
				return res, err
			}
			if err := aff.join(ctx, tx, x, rest); err != nil {
				return res, fmt.Errorf("finding users affected by keys %d..%d: %w", fromSeq, toSeq, err)
			}
		}
	}
	for u, matched := range aff {
		if matched {
			res.Users = append(res.Users, u)
		}
	}
	slices.Sort(res.Users)
	if len(b.disputers) > 0 {
		if res.Users, err = withoutDisputedOnly(ctx, tx, res.Users, b.disputers, fromSeq, toSeq); err != nil {
			return res, err
		}
	}
	return res, nil
}

// affected maps each affected user to whether the batch is a new match
// for them (see BatchResult).
type affected map[int64]bool

// joinSQL finds the users with instant delivery (all, or those of $6
// when it is not NULL) who follow a key of the arrays (a batchKeys slice),
// through instant_follows' primary key (key, user_id, including the
// options: an index-only scan per key, in key order): a follow is affected
// when a row of its key reaches it (cross-lists only when it includes
// them); matched says whether one newly selects a paper (replacement rows
// only for follows that include replacements).
const joinSQL = `
	SELECT f.user_id,
	       bool_or(b.primary_new OR (f.include_replacements AND b.primary_replaced)
	               OR (f.include_cross_lists AND (b.cross_new OR (f.include_replacements AND b.cross_replaced)))) AS matched
	FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::bool[])
	     AS b(key, primary_new, primary_replaced, cross_new, cross_replaced)
	JOIN instant_follows f ON f.key = b.key
	WHERE (b.primary_new OR b.primary_replaced OR (f.include_cross_lists AND (b.cross_new OR b.cross_replaced)))
	  AND ($6::bigint[] IS NULL OR f.user_id = ANY ($6))
	GROUP BY f.user_id`

// join adds the instant followers of the keys of ks to a: among users
// only, when users is not nil.
func (a affected) join(ctx context.Context, tx pgx.Tx, ks batchKeys, users []int64) error {
	if len(ks.keys) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, joinSQL, ks.keys, ks.primaryNew, ks.primaryReplaced, ks.crossNew, ks.crossReplaced, users)
	if err != nil {
		return err
	}
	var user int64
	var matched bool
	_, err = pgx.ForEachRow(rows, []any{&user, &matched}, func() error {
		a[user] = a[user] || matched
		return nil
	})
	return err
}

// unmatched returns the users with instant delivery for whom a holds no
// new match (instant_users(): two index-only scans).
func (a affected) unmatched(ctx context.Context, tx pgx.Tx) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT instant_users()`)
	if err != nil {
		return nil, fmt.Errorf("reading the users with instant delivery: %w", err)
	}
	var rest []int64
	var u int64
	_, err = pgx.ForEachRow(rows, []any{&u}, func() error {
		if !a[u] {
			rest = append(rest, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the users with instant delivery: %w", err)
	}
	return rest, nil
}

// split returns the keys of categories and archives (wide: followed by
// many) and the others (narrow).
func (ks batchKeys) split() (wide, narrow batchKeys) {
	for i, k := range ks.keys {
		to := &narrow
		if strings.HasPrefix(k, "category:") || strings.HasPrefix(k, "archive:") {
			to = &wide
		}
		to.keys = append(to.keys, k)
		to.primaryNew = append(to.primaryNew, ks.primaryNew[i])
		to.primaryReplaced = append(to.primaryReplaced, ks.primaryReplaced[i])
		to.crossNew = append(to.crossNew, ks.crossNew[i])
		to.crossReplaced = append(to.crossReplaced, ks.crossReplaced[i])
	}
	return wide, narrow
}

// batchKeys are keys of a batch as parallel arrays (in key order: the
// join's sort then finds them sorted), one element per key, with which rows
// of it the batch has: of a paper's primary category or of anything else
// but a cross-list (primary), of a cross-list (cross), of a first match
// (new) or of a new version (replaced).
type batchKeys struct {
	keys                        []string
	primaryNew, primaryReplaced []bool
	crossNew, crossReplaced     []bool
}
