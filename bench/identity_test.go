package bench

import (
	"context"
	"io"
	"testing"

	"followfeed/follow"
	"followfeed/identity"
	"followfeed/internal/testdb"
	"followfeed/match"
)

// A tiny scale through the real generator: every researcher has 2–3 ids,
// the late tenth is linked by LinkLate (twice gives the same work), and a
// follow of a late researcher's host id then matches their papers.
func TestGeneratedIdentitiesAndLateLinks(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	s := Scale{Users: 50, CategoryFollow: 2, ResearcherFoll: 3, Papers: 3000, Researchers: 100, AuthorsPer: 3, AbstractChars: 100, Identities: 1}
	if err := Generate(ctx, db, s, io.Discard); err != nil {
		t.Fatal(err)
	}
	var ids, minKeys, maxKeys int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), min(n), max(n) FROM (SELECT count(*) n FROM identity_keys GROUP BY identity_id) k`).
		Scan(&ids, &minKeys, &maxKeys); err != nil {
		t.Fatal(err)
	}
	if ids != s.Researchers || minKeys != 2 || maxKeys != 3 { // s2 with openalex or host (or both)
		t.Errorf("%d identities with %d..%d keys", ids, minKeys, maxKeys)
	}
	follows := follow.NewService(db)
	d := Deps{DB: db, Identities: identity.NewRegistry(db, follows)}
	for range 2 {
		ll, err := LinkLate(ctx, d, s)
		if err != nil || ll.Records != 10 || ll.Updated != 10 {
			t.Fatalf("late links %+v %v", ll, err)
		}
	}
	// Researcher 10 is late: their papers carry s2:10 only.
	var uid int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM users ORDER BY id LIMIT 1`).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	if _, _, err := follows.Follow(ctx, uid, follow.Target{Kind: follow.Researcher, ID: "host:10"}, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	var papers int
	if err := db.Pool.QueryRow(ctx, `SELECT count(DISTINCT paper_id) FROM paper_keys WHERE key = 'researcher:s2:10'`).Scan(&papers); err != nil {
		t.Fatal(err)
	}
	r, err := match.NewService(db).Matched(ctx, match.Query{UserID: uid, Only: &follow.Target{Kind: follow.Researcher, ID: "host:10"}, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if papers == 0 || len(r.Papers) != min(papers, 200) {
		t.Errorf("host:10 follow matched %d papers, s2:10 has %d", len(r.Papers), papers)
	}
}
