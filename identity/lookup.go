package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
)

// Identity is one researcher or institution as the registry knows it.
type Identity struct {
	Kind follow.Kind
	// ID is the canonical id: the ORCID iD or ROR id when known, else the
	// OpenAlex id, the Semantic Scholar id, the host's.
	ID         string
	Name       string // "" until a source names it
	OtherNames []string
	Country    string
	IDs        []string // every id, sorted
	// Followers counts the users who follow any id of the identity, each
	// once; the same number under every id.
	Followers int64
	// Following is whether the signed-in user follows any of its ids;
	// nil when nobody is signed in.
	Following *bool
}

// Lookup returns the identity that id (any id it is known by) belongs to,
// with its follower count and, when userID is not 0, whether that user
// follows it (-1: a signed-in user not yet known). An id the registry does
// not know is a database.Missing error.
func (r *Registry) Lookup(ctx context.Context, kind follow.Kind, id string, userID int64) (Identity, error) {
	t := follow.Target{Kind: kind, ID: id}
	var out Identity
	var keys []string
	err := r.db.Pool.QueryRow(ctx, `
		SELECT coalesce(i.name, ''), i.other_names, coalesce(i.country, ''),
		       ARRAY(SELECT k2.key FROM identity_keys k2 WHERE k2.identity_id = i.id ORDER BY k2.key)
		FROM identity_keys k JOIN identities i ON i.id = k.identity_id
		WHERE k.key = $1`, t.Key()).Scan(&out.Name, &out.OtherNames, &out.Country, &keys)
	if errors.Is(err, pgx.ErrNoRows) {
		return Identity{}, database.Missing("no %s is known by the id %s; the host registers them with PUT /v1/%ss", kind, id, kind)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("looking up %s: %w", t, err)
	}
	out.Kind = kind
	out.ID = canonicalOf(kind, keys)
	prefix := string(kind) + ":"
	for _, k := range keys {
		out.IDs = append(out.IDs, k[len(prefix):])
	}
	st, err := r.follows.Status(ctx, t, userID)
	if err != nil {
		return Identity{}, err
	}
	out.Followers, out.Following = st.Followers, st.Following
	return out, nil
}

// Split takes the id other off the identity that id belongs to: other
// becomes an identity of its own, and papers and OpenAlex never link the
// two again (the host can, with Put). Each side keeps its host-given
// names (the name of the host's last record that listed the id and the
// other names its records gave: identity_keys host_name,
// host_other_names): other's identity is named with other's (unnamed when
// the host gave it none), and those names leave the identity id stays in,
// as its name (replaced by its own ids' host-given name, or none) and
// among its other names, unless one of its own ids has them too. The followers
// of every id involved get new feed versions. It returns the identity id
// stays in. Unknown ids, or other not linked to id, are
// database.Missing; id == other is an apperr.Invalid.
func (r *Registry) Split(ctx context.Context, kind follow.Kind, id, other string) (Identity, error) {
	a, b := follow.Target{Kind: kind, ID: id}.Key(), follow.Target{Kind: kind, ID: other}.Key()
	if a == b {
		return Identity{}, apperr.InvalidField("other", "an id cannot be split off itself; name another id of the %s", kind)
	}
	err := r.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockWriters(ctx, tx); err != nil {
			return err
		}
		var ia, ib int64
		err := tx.QueryRow(ctx, `
			SELECT coalesce((SELECT identity_id FROM identity_keys WHERE key = $1), 0),
			       coalesce((SELECT identity_id FROM identity_keys WHERE key = $2), 0)`,
			a, b).Scan(&ia, &ib)
		if err != nil {
			return fmt.Errorf("reading identities of %s and %s: %w", a, b, err)
		}
		if ia == 0 {
			return database.Missing("no %s is known by the id %s", kind, id)
		}
		if ia != ib {
			return database.Missing("%s is not an id of the %s known as %s; nothing to split", other, kind, id)
		}
		// The identity's keys with their host-given names (a's first,
		// then the newest) and its names.
		var rest []string
		var gone, kept hostNames
		rows, err := tx.Query(ctx, `
			SELECT key, coalesce(host_name, ''), host_other_names FROM identity_keys WHERE identity_id = $1
			ORDER BY key = $2 DESC, created_at DESC, key`, ia, a)
		if err != nil {
			return fmt.Errorf("reading keys of identity %d: %w", ia, err)
		}
		var k string
		var n hostNames
		if _, err := pgx.ForEachRow(rows, []any{&k, &n.name, &n.others}, func() error {
			if k == b {
				gone = n
			} else {
				rest = append(rest, k)
				kept.add(n)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("reading keys of identity %d: %w", ia, err)
		}
		var name, nameSource string
		var others []string
		if err := tx.QueryRow(ctx, `SELECT coalesce(name, ''), coalesce(name_source, ''), other_names FROM identities WHERE id = $1`,
			ia).Scan(&name, &nameSource, &others); err != nil {
			return fmt.Errorf("reading identity %d: %w", ia, err)
		}
		name, nameSource, others = withoutNames(name, nameSource, others, gone, kept)
		goneOthers := slices.DeleteFunc(slices.Clone(gone.others), func(o string) bool { return o == gone.name })
		var nid int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO identities (kind, name, name_source, other_names)
			VALUES ($1, nullif($2, ''), CASE WHEN $2 <> '' THEN 'host' END, $3) RETURNING id`,
			string(kind), gone.name, nonNil(goneOthers)).Scan(&nid); err != nil {
			return fmt.Errorf("creating the split-off identity: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE identity_keys SET identity_id = $1, source = 'host' WHERE key = $2`, nid, b); err != nil {
			return fmt.Errorf("moving %s: %w", b, err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE identities SET name = nullif($2, ''), name_source = nullif($3, ''), other_names = $4, updated_at = now()
			WHERE id = $1`, ia, name, nameSource, nonNil(others)); err != nil {
			return fmt.Errorf("renaming identity %d: %w", ia, err)
		}
		// Both directions, so a barrier is found from either key.
		if _, err := tx.Exec(ctx, `
			INSERT INTO identity_splits (key, other_key)
			SELECT $1, r FROM unnest($2::text[]) r UNION ALL SELECT r, $1 FROM unnest($2::text[]) r
			ON CONFLICT DO NOTHING`, b, rest); err != nil {
			return fmt.Errorf("recording the split of %s: %w", b, err)
		}
		return bumpFollowers(ctx, tx, append(rest, b))
	})
	if err != nil {
		return Identity{}, err
	}
	return r.Lookup(ctx, kind, id, 0)
}

// hostNames are the names the host gave ids (identity_keys host_name and
// host_other_names).
type hostNames struct {
	name   string   // "" when none
	others []string // its other names (for several ids' added together, their names after the first too)
}

// add adds another id's host-given names: its name among the names (the
// first name added stays first), then its other names.
func (h *hostNames) add(o hostNames) {
	if o.name != "" {
		if h.name == "" {
			h.name = o.name
		} else {
			h.others = append(h.others, o.name)
		}
	}
	h.others = append(h.others, o.others...)
}

// has reports whether n is one of h's names.
func (h hostNames) has(n string) bool {
	return n != "" && (h.name == n || slices.Contains(h.others, n))
}

// withoutNames is the name, its source and the other names of an identity
// once an id has been split off it: the names the host gave that id
// (gone) leave them, unless an id that stays has them too (kept: the
// stayers' host-given names, those of the id the split was asked by
// first); a name that went is replaced by kept's name, or none.
func withoutNames(name, nameSource string, others []string, gone, kept hostNames) (string, string, []string) {
	went := func(n string) bool { return gone.has(n) && !kept.has(n) }
	others = slices.DeleteFunc(slices.Clone(others), went)
	if !went(name) {
		return name, nameSource, others
	}
	name, nameSource = kept.name, ""
	if name != "" {
		nameSource = string(SourceHost)
	}
	return name, nameSource, slices.DeleteFunc(others, func(n string) bool { return n == name })
}

// nonNil is ss, or an empty list for nil (text[] columns are NOT NULL).
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// Dispute is one user's "not this person" about one paper.
type Dispute struct {
	ArxivID   string    `json:"arxiv_id"`
	Title     string    `json:"title"`
	ID        string    `json:"id"` // the followed id the user disputed
	CreatedAt time.Time `json:"created_at"`
}

// Disputes returns the disputed attributions of the researcher id belongs
// to (every id of theirs), newest first, at most limit (1..1000). It says
// how many users disputed each paper only through repetition: one row
// per user.
func (r *Registry) Disputes(ctx context.Context, id string, limit int) ([]Dispute, error) {
	if _, err := r.Lookup(ctx, follow.Researcher, id, 0); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	key := follow.Target{Kind: follow.Researcher, ID: id}.Key()
	rows, err := r.db.Pool.Query(ctx, `
		SELECT p.arxiv_id, p.title, d.follow_key, d.created_at
		FROM identity_keys k JOIN identity_keys k2 ON k2.identity_id = k.identity_id
		JOIN identity_disputes d ON d.follow_key = k2.key
		JOIN `+catalog.PapersTable+` p ON p.id = d.paper_id
		WHERE k.key = $1
		ORDER BY d.created_at DESC, p.arxiv_id LIMIT $2`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("listing disputes of %s: %w", key, err)
	}
	return collectDisputes(rows)
}

// collectDisputes reads rows of (arxiv_id, title, follow_key, created_at),
// the disputed paper and the key of the follow it was disputed for.
func collectDisputes(rows pgx.Rows) ([]Dispute, error) {
	defer rows.Close()
	out := []Dispute{}
	for rows.Next() {
		var d Dispute
		var k string
		if err := rows.Scan(&d.ArxivID, &d.Title, &k, &d.CreatedAt); err != nil {
			return nil, err
		}
		d.ID = k[len("researcher:"):]
		d.CreatedAt = d.CreatedAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

// DisputeState is what a "Not by …?" link's page says of its paper: the
// paper's title ("" when it is not stored, or withdrawn) and when the user
// said it is not by the person (zero: not yet).
type DisputeState struct {
	Title    string
	Reported time.Time
}

// DisputeOf returns the state of user userID's "not by t" for paper
// arxivID (t a researcher follow, any id of theirs as NotThisPerson
// records it: its key). One statement, by the papers' and the disputes'
// primary keys.
func (r *Registry) DisputeOf(ctx context.Context, userID int64, t follow.Target, arxivID string) (DisputeState, error) {
	var st DisputeState
	var at *time.Time
	err := r.db.Pool.QueryRow(ctx, `
		SELECT p.title, d.created_at
		FROM `+catalog.PapersTable+` p
		LEFT JOIN identity_disputes d ON d.paper_id = p.id AND d.user_id = $1 AND d.follow_key = $2
		WHERE p.arxiv_id = $3 AND p.deleted_at IS NULL`, userID, t.Key(), arxivID).Scan(&st.Title, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return DisputeState{}, nil
	case err != nil:
		return DisputeState{}, fmt.Errorf("reading user %d's dispute of %s: %w", userID, arxivID, err)
	}
	if at != nil {
		st.Reported = *at
	}
	return st, nil
}

// NotThisPerson records that userID says the paper arxivID is not by the
// researcher their follow t means. The paper leaves that user's feeds and
// digests for that follow (and any other follow of the same person); it
// stays for the user's other follows that match it, and the hooks of
// OnNotThisPerson run. Idempotent. A user who
// does not follow t, a t that is not a researcher, or an unknown paper is
// an error saying so.
func (r *Registry) NotThisPerson(ctx context.Context, userID int64, t follow.Target, arxivID string) error {
	if t.Kind != follow.Researcher {
		return apperr.InvalidField("kind", "only a researcher follow can be told a paper is not by them")
	}
	return r.db.InTx(ctx, func(tx pgx.Tx) error {
		followed, err := follow.Follows(ctx, tx, userID, t.Key())
		if err != nil {
			return err
		}
		paperID, err := catalog.LiveID(ctx, tx, arxivID)
		if err != nil {
			return err
		}
		if !followed {
			return database.Missing("you do not follow %s; name one of your researcher follows", t.ID)
		}
		if paperID == 0 {
			return database.Missing("no paper %s is known", arxivID)
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO identity_disputes (user_id, follow_key, paper_id) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, userID, t.Key(), paperID)
		if err != nil {
			return fmt.Errorf("recording dispute of %s by user %d: %w", arxivID, userID, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		for _, h := range r.disputed {
			if err := h(ctx, tx, userID, t); err != nil {
				return err
			}
		}
		return account.BumpFeeds(ctx, tx, userID)
	})
}
