package follow_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/notify"
)

// bulkTargets are one target of every kind, as ParseTarget gives them.
func bulkTargets(t *testing.T) []follow.Target {
	t.Helper()
	var out []follow.Target
	for _, k := range [][2]string{{"category", "cs.LG"}, {"category", "cs"}, {"researcher", "s2:1741101"},
		{"institution", "ror:03dbr7087"}, {"query", "ti:graph AND cat:cs.LG"}, {"paper", "2202.02326"}} {
		tg, err := follow.ParseTarget(k[0], k[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

type followRow struct {
	key, kind, target string
	cross, repl       bool
	label             *string
}

func followRows(t *testing.T, db *database.DB, userID int64) []followRow {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT key, kind, target, include_cross_lists, include_replacements, label FROM follows WHERE user_id = $1 ORDER BY key`, userID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (followRow, error) {
		var f followRow
		return f, r.Scan(&f.key, &f.kind, &f.target, &f.cross, &f.repl, &f.label)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func feedVersion(t *testing.T, db *database.DB, userID int64) int64 {
	t.Helper()
	var v int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT version FROM user_feeds WHERE user_id = $1`, userID).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func bulkLoad(t *testing.T, db *database.DB, fs []follow.BulkFollow) (int64, error) {
	t.Helper()
	var n int64
	err := db.InTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		n, err = follow.BulkLoad(context.Background(), tx, slices.Values(fs))
		return err
	})
	return n, err
}

// BulkLoad writes the rows Follow writes for each target (key, kind,
// target, the default options), and nothing else: no follower counts, no
// feed bump; a user with instant delivery gets the follows mirrored in
// instant_follows; a follow stored already fails the load.
func TestBulkLoadWritesWhatFollowWrites(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	viaService, viaBulk, instant := newUser(t, db, "service"), newUser(t, db, "bulk"), newUser(t, db, "instant")
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := notify.PutDigestSettings(ctx, tx, []int64{instant}, notify.Instant, false)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	svc := follow.NewService(db)
	var bulk []follow.BulkFollow
	for _, tg := range bulkTargets(t) {
		if _, _, err := svc.Follow(ctx, viaService, tg, follow.Options{}); err != nil {
			t.Fatal(err)
		}
		bulk = append(bulk, follow.BulkFollow{UserID: viaBulk, Target: tg}, follow.BulkFollow{UserID: instant, Target: tg})
	}
	counts := func() map[string]int64 {
		rows, err := db.Pool.Query(ctx, `SELECT key, followers FROM follow_counts`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for rows.Next() {
			var k string
			var n int64
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			m[k] = n
		}
		return m
	}
	before, version := counts(), feedVersion(t, db, viaBulk)
	n, err := bulkLoad(t, db, bulk)
	if err != nil || n != int64(len(bulk)) {
		t.Fatalf("loaded %d of %d: %v", n, len(bulk), err)
	}
	want := followRows(t, db, viaService)
	if got := followRows(t, db, viaBulk); !slices.Equal(got, want) {
		t.Errorf("bulk rows\n%+v\nFollow's\n%+v", got, want)
	}
	for k, c := range counts() {
		if before[k] != c {
			t.Errorf("follow count of %s moved from %d to %d", k, before[k], c)
		}
	}
	if v := feedVersion(t, db, viaBulk); v != version {
		t.Errorf("feed version moved from %d to %d", version, v)
	}
	var mirrored int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM instant_follows WHERE user_id = $1`, instant).Scan(&mirrored); err != nil || mirrored != len(want) {
		t.Errorf("instant_follows holds %d of the instant user's %d follows (%v)", mirrored, len(want), err)
	}
	if _, err := bulkLoad(t, db, bulk[:1]); err == nil {
		t.Error("a follow stored already was loaded again")
	}
	if _, err := bulkLoad(t, db, []follow.BulkFollow{{UserID: viaBulk, Target: follow.Target{Kind: "colour", ID: "red"}}}); err == nil {
		t.Error("a target of no kind was loaded")
	}
}

// RecountAll makes every count the number of the key's follows (a key
// nobody follows any more at 0); Recount does so for its keys only;
// RemoveKind takes one kind's follows and their counts off and bumps their
// users' feeds, no one else's.
func TestRecountAndRemoveKind(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	a, b, other := newUser(t, db, "a"), newUser(t, db, "b"), newUser(t, db, "other")
	ts := bulkTargets(t)
	var fs []follow.BulkFollow
	for _, tg := range ts {
		fs = append(fs, follow.BulkFollow{UserID: a, Target: tg}, follow.BulkFollow{UserID: b, Target: tg})
	}
	fs = append(fs, follow.BulkFollow{UserID: other, Target: ts[0]})
	if _, err := bulkLoad(t, db, fs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO follow_counts (key, followers) VALUES ('category:astro-ph.GA', 7), ('researcher:s2:1741101', 9)`); err != nil {
		t.Fatal(err)
	}
	count := func(key string) int64 {
		var n int64
		if err := db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT followers FROM follow_counts WHERE key = $1), -1)`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	recount := func(fn func(tx pgx.Tx) error) {
		t.Helper()
		if err := db.InTx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	recount(func(tx pgx.Tx) error { return follow.Recount(ctx, tx, []string{ts[1].Key()}) })
	if count(ts[1].Key()) != 2 || count(ts[0].Key()) != -1 || count("researcher:s2:1741101") != 9 {
		t.Errorf("Recount of %s: %d, and of no other key: %d, %d", ts[1].Key(), count(ts[1].Key()), count(ts[0].Key()), count("researcher:s2:1741101"))
	}
	recount(func(tx pgx.Tx) error {
		n, err := follow.RecountAll(ctx, tx)
		// Five keys counted (ts[1] was right already), one set to 0.
		if n != int64(len(ts)) {
			t.Errorf("RecountAll wrote %d counts, want %d", n, len(ts))
		}
		return err
	})
	for _, tg := range ts {
		want := int64(2)
		if tg == ts[0] {
			want = 3
		}
		if c := count(tg.Key()); c != want {
			t.Errorf("%s: %d followers, want %d", tg.Key(), c, want)
		}
	}
	if c := count("category:astro-ph.GA"); c != 0 {
		t.Errorf("a key nobody follows counts %d", c)
	}

	va, vb, vo := feedVersion(t, db, a), feedVersion(t, db, b), feedVersion(t, db, other)
	var removed int
	recount(func(tx pgx.Tx) error {
		var err error
		removed, err = follow.RemoveKind(ctx, tx, follow.Query)
		return err
	})
	query := ts[4].Key()
	if removed != 2 || count(query) != -1 || len(followRows(t, db, a)) != len(ts)-1 || len(followRows(t, db, other)) != 1 {
		t.Errorf("RemoveKind: %d removed, count %d, %d follows of a left", removed, count(query), len(followRows(t, db, a)))
	}
	if feedVersion(t, db, a) != va+1 || feedVersion(t, db, b) != vb+1 || feedVersion(t, db, other) != vo {
		t.Error("RemoveKind bumped other feeds than its users'")
	}
}
