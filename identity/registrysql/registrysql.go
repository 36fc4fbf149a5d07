// Package registrysql is how other packages read the identity registry's
// tables (identities, identity_keys, identity_disputes) in statements of
// their own: fragments and whole queries, named and documented here, which
// package identity owns with the tables (docs/ARCHITECTURE.md, Rules). It
// is a package of its own, below follow, because follow reads the registry
// (names, a person's keys) and package identity imports follow.
//
// A fragment's parameters are SQL expressions of the caller's statement
// (column references, $n), never input: the caller builds its statement
// once, at package initialisation. The aliases a fragment introduces (k1,
// k2, i, d, …) are in its comment; the caller's statement must not use them
// for anything else.
package registrysql

// Key joins k1, key's row in the registry (an identity_keys row: key,
// identity_id), to each row of the caller's: a LEFT JOIN, so a key the
// registry does not know keeps its row with k1 NULL. A primary-key probe.
func Key(key string) string {
	return `LEFT JOIN identity_keys k1 ON k1.key = ` + key
}

// Expand is Key with k2 joined: each key of k1's identity (its person or
// institution), one row per key, k2 NULL when the registry does not know
// key; coalesce(k2.key, key) is then every key a follow of key matches.
// identity_keys_identity_idx, index-only.
func Expand(key string) string {
	return Key(key) + `
		LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id`
}

// Joined is Expand's inner form: k1, key's row, and k2, each key of its
// identity (key included), joined to each row of the caller's; no row for
// a key the registry does not know. A primary-key probe and an index-only
// scan of identity_keys_identity_idx per row.
func Joined(key string) string {
	return `JOIN identity_keys k1 ON k1.key = ` + key + `
			JOIN identity_keys k2 ON k2.identity_id = k1.identity_id`
}

// Record is Key with i joined: k1's identity (name, updated_at, …), NULL
// when the registry does not know key. A primary-key probe each.
func Record(key string) string {
	return Key(key) + `
		LEFT JOIN identities i ON i.id = k1.identity_id`
}

// IdentityOf is a FROM item with its condition: ik, key's identity_keys
// row, and i, its identity; no row when the registry does not know key.
func IdentityOf(key string) string {
	return `identity_keys ik JOIN identities i ON i.id = ik.identity_id WHERE ik.key = ` + key
}

// NameOf is the registry's name of key as a scalar subquery, NULL when the
// registry does not know key.
func NameOf(key string) string {
	return `(SELECT i.name FROM ` + IdentityOf(key) + `)`
}

// IdentityKeys selects (column key) every key of the identity ident:
// identity_keys_identity_idx, index-only.
func IdentityKeys(ident string) string {
	return `SELECT k2.key FROM identity_keys k2 WHERE k2.identity_id = ` + ident
}

// Keys selects (column k2.key) every key of key's identity, key included,
// through k1, key's row; none when the registry does not know key. A
// primary-key probe and an index-only scan.
func Keys(key string) string {
	return `SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			WHERE k1.key = ` + key
}

// PersonKeys selects (column key) the keys of key's person or
// institution, each once: key itself and every other key of its identity.
func PersonKeys(key string) string {
	return `SELECT ` + key + `::text AS key
			UNION
			` + Keys(key)
}

// LinkedKeys joins k2 to each row of the caller's: every key of the
// identity of key (key included), researcher and institution keys only
// (only they are in the registry: the other keys are not probed), and
// no row for a key the registry does not know. Through k1 (its
// identity_id): a primary-key probe and an index-only scan per key, in the
// order of the caller's rows.
func LinkedKeys(key string) string {
	return `CROSS JOIN LATERAL (
					SELECT k1.identity_id FROM identity_keys k1
					WHERE k1.key = ` + key + ` AND (` + key + ` LIKE 'researcher:%' OR ` + key + ` LIKE 'institution:%')
				) k1
				JOIN identity_keys k2 ON k2.identity_id = k1.identity_id`
}

// AnyDisputesSQL is true when anybody ever said of a paper "not this
// person".
const AnyDisputesSQL = `EXISTS (SELECT 1 FROM identity_disputes)`

// Disputes is true when user said of any paper "not this person" (one
// probe of identity_disputes' primary key, which starts with user_id).
func Disputes(user string) string {
	return `EXISTS (SELECT 1 FROM identity_disputes d WHERE d.user_id = ` + user + `)`
}

// Disputed is true when user said the paper paperID is not by the person
// a follow of key means: a dispute under key itself or under any key of
// ident, key's identity (NULL when the registry does not know key). A
// primary-key probe of identity_disputes (user_id, …) and, when ident is
// not NULL, an index-only scan of its keys.
func Disputed(user, paperID, key, ident string) string {
	return `EXISTS (
					SELECT 1 FROM identity_disputes d
					WHERE d.user_id = ` + user + ` AND d.paper_id = ` + paperID + `
					  AND (d.follow_key = ` + key + `
					       OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = ` + ident + `)))`
}

// DisputesOfSQL lists what the users $1 said is not by the person they
// follow: user_id, follow_key, paper_id.
const DisputesOfSQL = `SELECT user_id, follow_key, paper_id FROM identity_disputes WHERE user_id = ANY($1)`

// DisputersSQL lists the users who said of one of the papers $1 "not this
// person", each once. identity_disputes has no index on paper_id: with $1
// a constant (a custom plan), PostgreSQL hashes it for = ANY and makes one
// pass over the table, not one per paper.
const DisputersSQL = `SELECT DISTINCT user_id FROM identity_disputes WHERE paper_id = ANY($1)`
