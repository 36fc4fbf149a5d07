// Package mutesql is how other packages read package mute's table (mutes)
// in statements of their own: names and whole queries documented here,
// which package mute owns with the table (docs/ARCHITECTURE.md, Rules). It
// is a package of its own so that package match, which applies mutes to
// every surface, reads them without importing mute's service (mute imports
// follow and account; match must stay below the packages that render).
package mutesql

// Table is the table of mutes: id, user_id, kind ('researcher', 'query',
// 'category'), key (the muted match key: researcher:<id>, query:<normal
// form>, category:<id> or archive:<id> for its cross-lists), scope_key
// (the key of the follow the mute is limited to, NULL for every follow),
// created_at.
const Table = "mutes"

// OfUsersSQL lists the mutes of the users $1 (bigint[]): user_id, id,
// kind, key, scope_key (the empty string for every follow), created_at,
// in the order they were made. The unique index (user_id, key, scope_key) is the access path: one
// index range per user, nothing read for a user without mutes.
const OfUsersSQL = `SELECT user_id, id, kind, key, coalesce(scope_key, ''), created_at FROM mutes WHERE user_id = ANY($1) ORDER BY user_id, id`
