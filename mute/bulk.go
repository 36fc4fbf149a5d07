package mute

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The lab's loader and remover: the benchmark gives its generated users
// mutes (many users at once, to measure digests with them) with PutMany,
// and takes them off its dataset again with RemoveAll. People's mutes go
// through Service.Create and Delete.

// Bulk is one user's mute, for PutMany.
type Bulk struct {
	UserID int64
	Spec   Spec // as Parse returns it
}

// PutMany writes mutes in one statement, in tx: for lab datasets (the
// benchmark's users), as Create would write them one by one, but without
// its checks (a scope need not be one of the user's follows, and
// MaxPerUser is not enforced) and without bumping the users' feed
// versions (a lab's feeds keep their ETag). A mute the user already has
// (same what, same scope) is left as it is. It returns how many it wrote.
func PutMany(ctx context.Context, tx pgx.Tx, ms []Bulk) (int, error) {
	users, kinds, keys, scopes := make([]int64, len(ms)), make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms))
	for i, m := range ms {
		users[i], kinds[i], keys[i] = m.UserID, string(kindOf(m.Spec.What)), m.Spec.What.Key()
		if m.Spec.Scope != nil {
			scopes[i] = m.Spec.Scope.Key()
		}
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO mutes (user_id, kind, key, scope_key)
		SELECT u, k, key, nullif(s, '') FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS m(u, k, key, s)
		ON CONFLICT ON CONSTRAINT mutes_user_key_scope_key DO NOTHING`, users, kinds, keys, scopes)
	if err != nil {
		return 0, fmt.Errorf("loading %d mutes: %w", len(ms), err)
	}
	return int(tag.RowsAffected()), nil
}

// RemoveAll deletes every mute, in tx, and returns how many it deleted:
// for taking a lab dataset (the benchmark's, whose generated users have
// none) back to what it was built with after a measurement. It is every
// user's mutes: never for a service's database.
func RemoveAll(ctx context.Context, tx pgx.Tx) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM mutes`)
	if err != nil {
		return 0, fmt.Errorf("removing every mute: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
