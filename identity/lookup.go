package identity

import (
	"context"
	"errors"
	"fmt"
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
// becomes an identity of its own, without a name, and papers and OpenAlex
// never link the two again (the host can, with Put). The followers of
// every id involved get new feed versions. It returns the identity id
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
		rows, err := tx.Query(ctx, `SELECT key FROM identity_keys WHERE identity_id = $1 AND key <> $2`, ia, b)
		if err != nil {
			return fmt.Errorf("reading keys of identity %d: %w", ia, err)
		}
		rest, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("reading keys of identity %d: %w", ia, err)
		}
		var nid int64
		if err := tx.QueryRow(ctx, `INSERT INTO identities (kind) VALUES ($1) RETURNING id`, string(kind)).Scan(&nid); err != nil {
			return fmt.Errorf("creating the split-off identity: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE identity_keys SET identity_id = $1, source = 'host' WHERE key = $2`, nid, b); err != nil {
			return fmt.Errorf("moving %s: %w", b, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE identities SET updated_at = now() WHERE id = $1`, ia); err != nil {
			return fmt.Errorf("touching identity %d: %w", ia, err)
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

// NotThisPerson records that userID says the paper arxivID is not by the
// researcher their follow t means. The paper leaves that user's feeds and
// digests for that follow (and any other follow of the same person); it
// stays for the user's other follows that match it. Idempotent. A user who
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
		return account.BumpFeeds(ctx, tx, userID)
	})
}
