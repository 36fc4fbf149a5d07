package follow

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog/catalogsql"
	"followfeed/database"
	"followfeed/identity/registrysql"
	"followfeed/internal/text"
)

// MaxFollows is how many follows one user may have.
const MaxFollows = 5000

// MaxLabel is the longest display label a follow may carry.
const MaxLabel = 200

// Follow is one of a user's follows.
type Follow struct {
	Target
	IncludeCrossLists   bool
	IncludeReplacements bool
	Label               string
	CreatedAt           time.Time
	// SnoozedUntil is the user's date (a date: UTC midnight) until which
	// the follow delivers nothing by digest, alert or push, and
	// SnoozeEndsAt the instant it stands for (its midnight in the user's
	// time zone when it was set); both nil when it is not snoozed. Feeds
	// keep it. See Service.Snooze.
	SnoozedUntil *time.Time
	SnoozeEndsAt *time.Time
	// Name is the identity registry's name of a researcher or institution
	// (package identity), or the stored title of a followed paper (package
	// catalog); "" while neither is known (nobody named the person, the
	// paper is not harvested yet).
	Name string
}

// MaxPaperName is how many characters of a followed paper's title its
// name keeps (text.Shorten: cut at a word, then an ellipsis), so that a
// long title still fits a follow list's line, a checkbox or a feed title.
const MaxPaperName = 80

// DisplayName is the name of the follow's target everyone reads: the
// registry's name of a researcher or institution when one is known, a
// followed paper's title (shortened to MaxPaperName) once it is stored,
// else Target.DisplayName (a category's name, or the id). It shadows
// Target.DisplayName, so every surface that names a Follow gets it.
func (f Follow) DisplayName() string {
	switch {
	case f.Name == "":
		return f.Target.DisplayName()
	case f.Kind == Paper:
		return text.Shorten(f.Name, MaxPaperName)
	}
	return f.Name
}

// OwnerName is what the follow's owner reads for it (settings, OPML,
// per-follow feed titles): their own label when set, else DisplayName.
func (f Follow) OwnerName() string {
	if f.Label != "" {
		return f.Label
	}
	return f.DisplayName()
}

// ReasonLabels maps each follow's key to the name its owner reads for it
// as a match reason, for Target.ReasonName's label argument: the label
// when set, else the registry's name (absent when neither is known, so
// ReasonName falls back to the author's name on the paper, then the id).
// A followed paper's title is no label: its reasons are its events, which
// name the paper themselves (match.Paper.ReasonName).
func ReasonLabels(follows []Follow) map[string]string {
	out := make(map[string]string, len(follows))
	for _, f := range follows {
		switch {
		case f.Label != "":
			out[f.Key()] = f.Label
		case f.Name != "" && f.Kind != Paper:
			out[f.Key()] = f.Name
		}
	}
	return out
}

// nameOf is the name the registry or the catalog knows key's target by
// (Follow.Name), as a scalar expression of key: the registry's name of a
// researcher or institution (one primary-key probe of identity_keys), else
// a followed paper's stored title (one probe of papers' arxiv_id index,
// for a paper's key only), else the empty string. It is part of the
// statement that reads the follows: no follow costs a query of its own.
func nameOf(key string) string {
	return `coalesce(` + registrysql.NameOf(key) + `, ` + catalogsql.PaperTitleOf(key) + `, '')`
}

// Options change a follow. A nil field keeps the current value (or the
// default for a new follow: cross-lists included, replacements not). A
// follow of kind paper always includes replacements: its events are
// replacement rows.
type Options struct {
	IncludeCrossLists   *bool
	IncludeReplacements *bool
	Label               *string
}

// Status is what a Follow button shows.
type Status struct {
	// Name is the target's Follow.Name (the registry's name of a
	// researcher or institution, a followed paper's stored title), ""
	// when unknown: show Follow{Target: t, Name: Name}.DisplayName().
	Name string
	// Followers counts users following the target, each once: for a
	// researcher or institution, users following any of its ids. It is
	// 0 when FollowersHidden.
	Followers int64
	// FollowersHidden is true for a query with fewer than
	// MinShownQueryFollowers followers: its count is not public.
	FollowersHidden bool
	// Following is nil when nobody is signed in.
	Following *bool
}

// Page is one page of a user's follows, newest first.
type Page struct {
	Follows []Follow
	// Next is the cursor of the following page, "" on the last one.
	Next string
}

// Service reads and changes follows. Every change also bumps the user's
// feed version, so feeds never answer 304 for a stale follow list.
type Service struct {
	db          *database.DB
	hooks       []FollowHook
	unfollowing []FollowHook
}

// FollowHook runs inside the transaction of a follow that Follow created
// (not of an update): package catalog enqueues a new query's backfill
// job there, so the job exists exactly when the follow does. A hook must
// stay cheap: it runs while the user's row is locked.
type FollowHook func(ctx context.Context, tx pgx.Tx, userID int64, t Target) error

// OnFollow registers a hook for Follow. Register hooks before serving; the
// Service is not safe for registering concurrently with Follow.
func (s *Service) OnFollow(h FollowHook) { s.hooks = append(s.hooks, h) }

// OnUnfollow registers a hook that runs inside the transaction of a
// follow that Unfollow removed (the user's row locked, the follow gone):
// package ranking counts the change there. Register hooks before serving.
func (s *Service) OnUnfollow(h FollowHook) { s.unfollowing = append(s.unfollowing, h) }

// NewService returns the follow service over db.
func NewService(db *database.DB) *Service { return &Service{db: db} }

// Follow creates the follow of t by userID, or updates its options when it
// exists. A label must be text without control characters (apperr.Invalid
// otherwise); it is stored as text.Collapse makes it (bidirectional
// controls removed, whitespace and line separators collapsed to single
// spaces, trimmed) and must then be at most MaxLabel characters. created reports which. It is idempotent and safe under
// concurrency: the user's row is locked first, so racing requests neither
// duplicate a follow nor miscount followers, and the MaxFollows limit holds.
func (s *Service) Follow(ctx context.Context, userID int64, t Target, o Options) (f Follow, created bool, err error) {
	if o.Label != nil {
		l := strings.TrimSpace(*o.Label)
		if !utf8.ValidString(l) || strings.ContainsFunc(l, unicode.IsControl) {
			// NUL cannot be stored, and escape or other control characters
			// would reach digest bodies and feed readers.
			return Follow{}, false, apperr.InvalidField("label", "a label may not contain control characters (such as NUL, tab, newline or escape); use plain text")
		}
		// One line as it is read: no bidirectional control, no line or
		// paragraph separator, no run of spaces.
		l = text.Collapse(l, -1)
		if utf8.RuneCountInString(l) > MaxLabel {
			return Follow{}, false, apperr.InvalidField("label", "a label may have at most %d characters", MaxLabel)
		}
		o.Label = &l
	}
	if t.Kind == Paper {
		// A paper follow exists for its events (new versions, publication,
		// withdrawal, citations), which are replacement rows: it always
		// includes them.
		yes := true
		o.IncludeReplacements = &yes
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := account.LockUser(ctx, tx, userID); err != nil {
			return err
		}
		var exists bool
		var count int
		// Index-only on the primary key (user_id, key).
		err := tx.QueryRow(ctx, `
			SELECT count(*), coalesce(bool_or(key = $2), false) FROM follows WHERE user_id = $1`,
			userID, t.Key()).Scan(&count, &exists)
		if err != nil {
			return fmt.Errorf("counting follows of user %d: %w", userID, err)
		}
		if !exists && count >= MaxFollows {
			return apperr.New(apperr.Conflict, "you already follow %d researchers, categories and institutions, the most one account may; unfollow some first", MaxFollows)
		}
		var label *string
		f, created, label, err = upsertFollow(ctx, tx, userID, t, o)
		if err != nil {
			return err
		}
		if label != nil {
			f.Label = *label
		}
		if created {
			if _, err := tx.Exec(ctx, `
				INSERT INTO follow_counts (key, followers) VALUES ($1, 1)
				ON CONFLICT (key) DO UPDATE SET followers = follow_counts.followers + 1`, t.Key()); err != nil {
				return fmt.Errorf("counting follower of %s: %w", t.Key(), err)
			}
			for _, h := range s.hooks {
				if err := h(ctx, tx, userID, t); err != nil {
					return err
				}
			}
		}
		return bumpFeed(ctx, tx, userID)
	})
	if err != nil {
		return Follow{}, false, err
	}
	return f, created, nil
}

// upsertFollowSQL writes a follow and returns it with the name of its
// target (nameOf).
var upsertFollowSQL = `
		INSERT INTO follows (user_id, key, kind, target, include_cross_lists, include_replacements, label)
		VALUES ($1, $2, $3, $4, coalesce($5, true), coalesce($6, false), nullif($7, ''))
		ON CONFLICT (user_id, key) DO UPDATE SET
			include_cross_lists  = coalesce($5, follows.include_cross_lists),
			include_replacements = coalesce($6, follows.include_replacements),
			label                = CASE WHEN $7::text IS NULL THEN follows.label ELSE nullif($7, '') END
		RETURNING include_cross_lists, include_replacements, label, created_at, (xmax = 0),
			` + nameOf("follows.key") + `, snoozed_until, snooze_ends_at`

func upsertFollow(ctx context.Context, tx pgx.Tx, userID int64, t Target, o Options) (Follow, bool, *string, error) {
	f := Follow{Target: t}
	var created bool
	var label *string
	// (xmax = 0) is true only for a freshly inserted row: the standard way to
	// tell an insert from a conflict update in one statement.
	err := tx.QueryRow(ctx, upsertFollowSQL,
		userID, t.Key(), string(t.Kind), t.ID, o.IncludeCrossLists, o.IncludeReplacements, o.Label,
	).Scan(&f.IncludeCrossLists, &f.IncludeReplacements, &label, &f.CreatedAt, &created, &f.Name, &f.SnoozedUntil, &f.SnoozeEndsAt)
	if err != nil {
		return Follow{}, false, nil, fmt.Errorf("saving follow %s of user %d: %w", t, userID, err)
	}
	return f, created, label, nil
}

// Unfollow removes the follow; removed is false when there was none (which
// is not an error: unfollowing is idempotent).
func (s *Service) Unfollow(ctx context.Context, userID int64, t Target) (removed bool, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		// Same lock order as Follow (user, follow, count): no deadlocks.
		if err := account.LockUser(ctx, tx, userID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM follows WHERE user_id = $1 AND key = $2`, userID, t.Key())
		if err != nil {
			return fmt.Errorf("deleting follow %s of user %d: %w", t, userID, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		removed = true
		if _, err := tx.Exec(ctx, `UPDATE follow_counts SET followers = followers - 1 WHERE key = $1`, t.Key()); err != nil {
			return fmt.Errorf("uncounting follower of %s: %w", t.Key(), err)
		}
		for _, h := range s.unfollowing {
			if err := h(ctx, tx, userID, t); err != nil {
				return err
			}
		}
		return bumpFeed(ctx, tx, userID)
	})
	return removed, err
}

// statusSQL reads key $1's name (nameOf), its follower count (per person)
// and whether user $2 follows it (Status).
var statusSQL = `
		WITH ks AS (
			` + registrysql.PersonKeys("$1") + `
		)
		SELECT ` + nameOf("$1::text") + `,
		       CASE WHEN (SELECT count(*) FROM ks) = 1
		            THEN coalesce((SELECT followers FROM follow_counts WHERE key = $1), 0)
		            ELSE (SELECT count(DISTINCT f.user_id) FROM follows f WHERE f.key IN (SELECT key FROM ks)) END,
		       EXISTS (SELECT 1 FROM follows f WHERE f.user_id = $2 AND f.key IN (SELECT key FROM ks))`

// Status returns the follower count of t (hidden for a query with fewer
// than MinShownQueryFollowers) and, when userID is not 0, whether that user
// follows it. A researcher or institution counts as a person
// (package identity): users following any id of theirs, each once, the
// same number under every id; "following" is true whichever id the user
// followed. A target the registry does not link to other ids costs two
// primary-key lookups (follow_counts, follows); a linked one counts
// follows_key_idx entries of its few keys. It reads on the read replica
// when one is attached and not lagging (bounded staleness: about a second,
// see database.DB.Read), else on the primary.
func (s *Service) Status(ctx context.Context, t Target, userID int64) (Status, error) {
	var st Status
	var following bool
	err := s.db.Read(ctx, nil, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, statusSQL, t.Key(), userID).Scan(&st.Name, &st.Followers, &following)
	})
	if err != nil {
		return Status{}, fmt.Errorf("reading follow status of %s: %w", t, err)
	}
	if userID != 0 {
		st.Following = &following
	}
	if t.Kind == Query && st.Followers < MinShownQueryFollowers {
		st.Followers, st.FollowersHidden = 0, true
	}
	return st, nil
}

// MinShownQueryFollowers is the fewest followers whose count Status shows
// for a query: a followed query is personal, and a count of one or two
// would tell anyone who asks that somebody tracks exactly that (a
// security review finding). Below it the count is hidden
// (Status.FollowersHidden); categories, people, institutions and papers
// show theirs.
const MinShownQueryFollowers = 5

// nameSQL reads the name of key $1 (nameOf).
var nameSQL = `
		SELECT ` + nameOf("$1::text")

// Name returns the registry's name of t (a researcher or institution) or
// the stored title of a paper t, "" when neither is known: Follow.Name.
func (s *Service) Name(ctx context.Context, t Target) (string, error) {
	var name string
	err := s.db.Pool.QueryRow(ctx, nameSQL, t.Key()).Scan(&name)
	if err != nil {
		return "", fmt.Errorf("reading the name of %s: %w", t, err)
	}
	return name, nil
}

// namesSQL reads the names of the keys $1 (text[]): key, nameOf(key).
var namesSQL = `
		SELECT k, ` + nameOf("k") + ` FROM unnest($1::text[]) AS k`

// Names is Name for many targets in one statement: each target's name by
// its Key, the targets of unknown name absent (a follow's, a mute's
// researcher: what Follow.Name would be for it).
func (s *Service) Names(ctx context.Context, ts []Target) (map[string]string, error) {
	out := map[string]string{}
	if len(ts) == 0 {
		return out, nil
	}
	keys := make([]string, 0, len(ts))
	for _, t := range ts {
		keys = append(keys, t.Key())
	}
	rows, err := s.db.Pool.Query(ctx, namesSQL, keys)
	if err != nil {
		return nil, fmt.Errorf("reading the names of %d targets: %w", len(keys), err)
	}
	var key, name string
	_, err = pgx.ForEachRow(rows, []any{&key, &name}, func() error {
		if name != "" {
			out[key] = name
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the names of %d targets: %w", len(keys), err)
	}
	return out, nil
}

// getFollowSQL reads user $1's follow of key $2.
var getFollowSQL = `SELECT ` + followColumns + ` FROM follows WHERE user_id = $1 AND key = $2`

// Get returns one follow of the user, or a database.Missing error saying
// the user does not follow t.
func (s *Service) Get(ctx context.Context, userID int64, t Target) (Follow, error) {
	rows, err := s.db.Pool.Query(ctx, getFollowSQL, userID, t.Key())
	if err != nil {
		return Follow{}, fmt.Errorf("reading follow %s of user %d: %w", t, userID, err)
	}
	fs, err := collectFollows(rows)
	if err != nil {
		return Follow{}, err
	}
	if len(fs) == 0 {
		return Follow{}, database.Missing("you do not follow %s (any more); reload the page", t.DisplayName())
	}
	return fs[0], nil
}

// listFollowsSQL reads a page of user $1's follows, newest first: at most
// $4, after (created_at $3, key $2) unless $2 is empty.
// follows_user_created_idx serves both the filter and the order.
var listFollowsSQL = `
		SELECT ` + followColumns + ` FROM follows
		WHERE user_id = $1 AND ($2::text = '' OR (created_at, key) < ($3, $2))
		ORDER BY created_at DESC, key DESC
		LIMIT $4`

// List returns a page of the user's follows, newest first. cursor is "" for
// the first page or a Page.Next; limit is clamped to 1..500 (default 100).
func (s *Service) List(ctx context.Context, userID int64, cursor string, limit int) (Page, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > 500 {
		return Page{}, apperr.InvalidField("limit", "at most 500 follows per page")
	}
	var after time.Time
	afterKey := ""
	if cursor != "" {
		var err error
		after, afterKey, err = decodeCursor(cursor)
		if err != nil {
			return Page{}, apperr.InvalidField("cursor", "not a cursor from a previous page's \"next\"")
		}
	}
	rows, err := s.db.Pool.Query(ctx, listFollowsSQL, userID, afterKey, after, limit+1)
	if err != nil {
		return Page{}, fmt.Errorf("listing follows of user %d: %w", userID, err)
	}
	fs, err := collectFollows(rows)
	if err != nil {
		return Page{}, err
	}
	p := Page{Follows: fs}
	if len(fs) > limit {
		p.Follows = fs[:limit]
		last := p.Follows[limit-1]
		p.Next = encodeCursor(last.CreatedAt, last.Key())
	}
	return p, nil
}

// All returns every follow of the user, newest first.
func (s *Service) All(ctx context.Context, userID int64) ([]Follow, error) {
	return allFollows(ctx, s.db.Pool, userID)
}

// Researchers returns those of the user's researcher follows that reach
// one of authorIDs (normalised researcher ids, as a paper's authors carry
// them): a follow reaches its own id and, when the identity registry knows
// the person, every id of theirs (Expanded.Keys), as matching does. Each
// follow once, newest first. The feedback link's page offers "not this
// person" beside them.
func (s *Service) Researchers(ctx context.Context, userID int64, authorIDs []string) ([]Expanded, error) {
	if len(authorIDs) == 0 {
		return nil, nil
	}
	var b pgx.Batch
	var got []Expanded
	QueueExpandedMany(&b, []int64{userID}, func(m map[int64][]Expanded) { got = m[userID] })
	if err := s.db.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	authors := make(map[string]bool, len(authorIDs))
	for _, id := range authorIDs {
		authors[Target{Kind: Researcher, ID: id}.Key()] = true
	}
	var out []Expanded
	for _, e := range got {
		// Only a researcher follow's keys are researcher keys.
		keys := e.Keys
		if keys == nil {
			keys = []string{e.Key}
		}
		if slices.ContainsFunc(keys, func(k string) bool { return authors[k] }) {
			out = append(out, e)
		}
	}
	return out, nil
}

// QueueAllIn queues on b the statement All runs, so that it shares a round
// trip with the other statements of a snapshot (database.DB.ReadBatch):
// when b's results are read, done gets the follows All would return,
// unless reading them failed (the batch's Close says why).
func QueueAllIn(b *pgx.Batch, userID int64, done func([]Follow)) {
	b.Queue(allFollowsSQL, userID).Query(func(rows pgx.Rows) error {
		fs, err := collectFollows(rows)
		if err != nil {
			return fmt.Errorf("listing follows of user %d: %w", userID, err)
		}
		done(fs)
		return nil
	})
}

// allFollowsSQL lists user $1's follows, newest first.
var allFollowsSQL = `
		SELECT ` + followColumns + ` FROM follows WHERE user_id = $1 ORDER BY created_at DESC, key DESC`

func allFollows(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, userID int64) ([]Follow, error) {
	rows, err := q.Query(ctx, allFollowsSQL, userID)
	if err != nil {
		return nil, fmt.Errorf("listing follows of user %d: %w", userID, err)
	}
	return collectFollows(rows)
}

// AllMany returns the follows of several users at once, each list newest
// first; users without follows are absent.
func (s *Service) AllMany(ctx context.Context, userIDs []int64) (map[int64][]Follow, error) {
	var b pgx.Batch
	var got map[int64][]Expanded
	QueueExpandedMany(&b, userIDs, func(m map[int64][]Expanded) { got = m })
	if err := s.db.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	return Unexpanded(got), nil
}

// Unexpanded returns the follows of m without their keys, per user and in
// the same order.
func Unexpanded(m map[int64][]Expanded) map[int64][]Follow {
	out := make(map[int64][]Follow, len(m))
	for u, es := range m {
		fs := make([]Follow, len(es))
		for i, e := range es {
			fs[i] = e.Follow
		}
		out[u] = fs
	}
	return out
}

// Expanded is a follow with its stored key and, when the identity registry
// knows the key, every key of its person or institution (Keys, the key
// included; nil otherwise): the keys whose papers it matches.
type Expanded struct {
	Follow
	Key  string
	Keys []string
}

// expandedManySQL lists the follows of users $1, each list newest first,
// with the registry's name and keys of each: one primary-key probe of
// identity_keys per follow (joined, not a subquery per column), the
// identity's row and an index-only scan of its keys; a followed paper's
// title instead of a name (catalogsql.PaperTitleOf: a probe for paper
// follows only).
var expandedManySQL = `
	SELECT f.user_id, f.key, f.include_cross_lists, f.include_replacements, coalesce(f.label, ''), f.created_at,
	       f.snoozed_until, f.snooze_ends_at,
	       coalesce(i.name, ` + catalogsql.PaperTitleOf("f.key") + `, ''),
	       CASE WHEN k1.identity_id IS NOT NULL THEN ARRAY(` + registrysql.IdentityKeys("k1.identity_id") + `) END
	FROM follows f
	` + registrysql.Record("f.key") + `
	WHERE f.user_id = ANY($1)
	ORDER BY f.user_id, f.created_at DESC, f.key DESC`

// QueueExpandedMany queues on b the read of the follows of several users at
// once, each list newest first (as AllMany), with their keys; once b has
// been read, done has them (users without follows absent).
func QueueExpandedMany(b *pgx.Batch, userIDs []int64, done func(map[int64][]Expanded)) {
	b.Queue(expandedManySQL, userIDs).Query(func(rows pgx.Rows) error {
		out := map[int64][]Expanded{}
		for rows.Next() {
			var uid int64
			var e Expanded
			f := &e.Follow
			if err := rows.Scan(&uid, &e.Key, &f.IncludeCrossLists, &f.IncludeReplacements, &f.Label, &f.CreatedAt,
				&f.SnoozedUntil, &f.SnoozeEndsAt, &f.Name, &e.Keys); err != nil {
				return fmt.Errorf("reading follow: %w", err)
			}
			t, err := TargetFromKey(e.Key)
			if err != nil {
				return fmt.Errorf("reading follow key %q: %w", e.Key, err)
			}
			f.Target = t
			out[uid] = append(out[uid], e)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("listing follows of %d users: %w", len(userIDs), err)
		}
		done(out)
		return nil
	})
}

// followColumns are a follow's columns and the name of its target
// (nameOf: a probe or two per follow, in the same statement).
var followColumns = `key, include_cross_lists, include_replacements, coalesce(label, ''), created_at,
	snoozed_until, snooze_ends_at, ` + nameOf("follows.key")

func collectFollows(rows pgx.Rows) ([]Follow, error) {
	var out []Follow
	for rows.Next() {
		var f Follow
		var key string
		if err := rows.Scan(&key, &f.IncludeCrossLists, &f.IncludeReplacements, &f.Label, &f.CreatedAt,
			&f.SnoozedUntil, &f.SnoozeEndsAt, &f.Name); err != nil {
			return nil, fmt.Errorf("reading follow: %w", err)
		}
		t, err := TargetFromKey(key)
		if err != nil {
			return nil, fmt.Errorf("reading follow key %q: %w", key, err)
		}
		f.Target = t
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading follows: %w", err)
	}
	return out, nil
}

// bumpFeed marks the user's feeds changed (new ETag).
func bumpFeed(ctx context.Context, tx pgx.Tx, userID int64) error {
	return account.BumpFeeds(ctx, tx, userID)
}

// Cursors are opaque to clients: base64url(created_at in µs, key).
func encodeCursor(t time.Time, key string) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(t.UnixMicro()))
	return base64.RawURLEncoding.EncodeToString(append(b, key...))
}

// maxKeyBytes bounds a follow key in bytes: follows.key holds at most 420
// characters (a query's key is the longest), of at most 4 bytes each.
const maxKeyBytes = 4 * 420

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 9 || len(b) > 8+maxKeyBytes {
		return time.Time{}, "", errors.New("bad cursor")
	}
	if key := b[8:]; !utf8.Valid(key) || bytes.IndexByte(key, 0) >= 0 {
		return time.Time{}, "", errors.New("bad cursor") // keys are text; the database refuses anything else
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))), string(b[8:]), nil
}
