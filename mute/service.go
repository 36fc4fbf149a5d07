package mute

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/mute/mutesql"
)

// Service keeps users' mutes.
type Service struct {
	db *database.DB
}

// NewService returns the mute service over db.
func NewService(db *database.DB) *Service { return &Service{db: db} }

// createSQL inserts a mute, or finds the same one (what and scope) the
// user already has: created is false then. The unique constraint's
// NULLS NOT DISTINCT makes two unscoped mutes of one key conflict too.
const createSQL = `
	WITH ins AS (
		INSERT INTO mutes (user_id, kind, key, scope_key) VALUES ($1, $2, $3, nullif($4, ''))
		ON CONFLICT ON CONSTRAINT mutes_user_key_scope_key DO NOTHING
		RETURNING id, created_at, true AS created
	)
	SELECT id, created_at, created FROM ins
	UNION ALL
	SELECT id, created_at, false FROM mutes
	WHERE user_id = $1 AND key = $3 AND scope_key IS NOT DISTINCT FROM nullif($4, '') AND NOT EXISTS (SELECT 1 FROM ins)`

// Create saves the mute s for userID, or returns the same mute (same what,
// same scope) the user already has, with created false: idempotent. The
// user's row is locked first (account.LockUser, as follows are), so
// racing requests neither duplicate a mute nor pass MaxPerUser. A scope
// that is not one of the user's follows is an apperr.Invalid error on
// field "follow"; a user at MaxPerUser mutes gets one on the field of
// what they mute. The user's feeds get a new validator (ETag) in the
// same transaction: what they show changes.
func (s *Service) Create(ctx context.Context, userID int64, sp Spec) (m Mute, created bool, err error) {
	m = Mute{What: sp.What, Scope: sp.Scope}
	scope := ""
	if sp.Scope != nil {
		scope = sp.Scope.Key()
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := account.LockUser(ctx, tx, userID); err != nil {
			return err
		}
		if sp.Scope != nil {
			ok, err := follow.Follows(ctx, tx, userID, scope)
			if err != nil {
				return err
			}
			if !ok {
				return apperr.InvalidField("follow", "you do not follow %s; a mute can be limited to one of your follows (GET /v1/me/follows), or to none for all of them", sp.Scope)
			}
		}
		var n int
		var exists bool
		if err := tx.QueryRow(ctx, `
			SELECT count(*), coalesce(bool_or(key = $2 AND scope_key IS NOT DISTINCT FROM nullif($3, '')), false)
			FROM mutes WHERE user_id = $1`, userID, sp.What.Key(), scope).Scan(&n, &exists); err != nil {
			return fmt.Errorf("counting mutes of user %d: %w", userID, err)
		}
		if !exists && n >= MaxPerUser {
			return apperr.InvalidField(string(kindOf(sp.What)), "you already have %d mutes, the most one user may; remove some first (DELETE /v1/me/mutes/{id}), or unfollow what you mute most of", MaxPerUser)
		}
		if err := tx.QueryRow(ctx, createSQL, userID, string(kindOf(sp.What)), sp.What.Key(), scope).
			Scan(&m.ID, &m.CreatedAt, &created); err != nil {
			return fmt.Errorf("saving mute of %s for user %d: %w", sp.What.Key(), userID, err)
		}
		if !created {
			return nil
		}
		return account.BumpFeeds(ctx, tx, userID)
	})
	if err != nil {
		return Mute{}, false, err
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, created, nil
}

// List returns userID's mutes in the order they were made (at most
// MaxPerUser).
func (s *Service) List(ctx context.Context, userID int64) ([]Mute, error) {
	ms, err := Of(ctx, s.db.Pool, []int64{userID})
	if err != nil {
		return nil, err
	}
	out := ms[userID]
	if out == nil {
		out = []Mute{}
	}
	return out, nil
}

// Querier is what Of reads with: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Of returns the mutes of users, per user in the order they were made
// (users without mutes absent), read with q (mutesql.OfUsersSQL).
func Of(ctx context.Context, q Querier, users []int64) (map[int64][]Mute, error) {
	rows, err := q.Query(ctx, mutesql.OfUsersSQL, users)
	if err != nil {
		return nil, fmt.Errorf("listing mutes of %d users: %w", len(users), err)
	}
	out := map[int64][]Mute{}
	var (
		uid, id          int64
		kind, key, scope string
		at               time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &id, &kind, &key, &scope, &at}, func() error {
		m := Mute{ID: id, What: targetOfKey(Kind(kind), key), CreatedAt: at.UTC()}
		if scope != "" {
			t, err := follow.TargetFromKey(scope)
			if err != nil {
				t = targetOfKey("", scope)
			}
			m.Scope = &t
		}
		out[uid] = append(out[uid], m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading mutes of %d users: %w", len(users), err)
	}
	return out, nil
}

// Delete removes userID's mute id. Another user's mute, or one that is
// gone, is a not-found error (404): a user learns nothing of others'
// mutes. The user's feeds get a new validator in the same transaction.
func (s *Service) Delete(ctx context.Context, userID, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM mutes WHERE id = $1 AND user_id = $2`, id, userID)
		if err != nil {
			return fmt.Errorf("removing mute %d of user %d: %w", id, userID, err)
		}
		if tag.RowsAffected() == 0 {
			return database.Missing("you have no mute %d; GET /v1/me/mutes lists yours", id)
		}
		return account.BumpFeeds(ctx, tx, userID)
	})
}

// EraseUser erases user userID's mutes in tx (the erasure's transaction,
// account.Users.Erase, whose hook it is).
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM mutes WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("erasing the mutes of user %d: %w", userID, err)
	}
	return nil
}
