package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"followfeed/app"
	"followfeed/config"
	"followfeed/follow"
	"followfeed/internal/testapp"
)

// contractFollow is an entry of GET /v1/me/follows with its creation time.
type contractFollow struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// checkProblem fails unless r is a problem+json document of the given status
// and type.
func checkProblem(t *testing.T, what string, r *testapp.Response, status int, typ string) problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: want %d, got %d %s", what, status, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	var p problem
	r.JSON(t, &p)
	if p.Status != status || p.Type != typ || p.Detail == "" {
		t.Errorf("%s: problem %+v, want status %d, type %s and a detail", what, p, status, typ)
	}
	return p
}

// TestPerUserRateLimit protects the per-user limit of userRoute: with
// RATE_LIMIT_PER_USER=2 (per-IP off) each account gets a bucket of
// int(2*rate)+1 = 5 requests (app/wire.go), refilled at 2/s. One user's burst
// beyond it is refused with 429, Retry-After and a problem document, while a
// second user from the same address keeps their own full burst. It fails if
// the limit is not applied, is shared between users (or keyed by address),
// shrinks the burst, or answers without Retry-After or problem+json.
func TestPerUserRateLimit(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_USER", "2", "RATE_LIMIT_PER_IP", "0")
	const rate, burst = 2.0, 5
	alice := testapp.Token(t, "rl-alice", "")
	bob := testapp.Token(t, "rl-bob", "")

	began := time.Now()
	// The bucket starts full: the whole burst is allowed.
	for i := range burst {
		if r := c.Do("GET", "/v1/me", alice, nil); r.Status != http.StatusOK {
			t.Fatalf("request %d of alice's burst of %d: %d %s", i+1, burst, r.Status, r.Body)
		}
	}
	// Beyond it alice is limited, give or take what refilled meanwhile.
	var limited *testapp.Response
	allowed := burst
	for range 40 {
		r := c.Do("GET", "/v1/me", alice, nil)
		if r.Status == http.StatusTooManyRequests {
			limited = r
			break
		}
		if r.Status != http.StatusOK {
			t.Fatalf("alice: %d %s", r.Status, r.Body)
		}
		allowed++
	}
	if limited == nil {
		t.Fatalf("alice made %d requests in %v at %g/s (burst %d) and was never limited", allowed, time.Since(began), rate, burst)
	}
	if most := burst + int(time.Since(began).Seconds()*rate) + 1; allowed > most {
		t.Errorf("alice got %d requests through in %v; at most %d fit a burst of %d refilled at %g/s", allowed, time.Since(began), most, burst, rate)
	}
	// At 2/s the next token is at most 0.5 s away, rounded up to whole seconds.
	if ra := limited.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want \"1\" (the next token is at most 1/%g s away)", ra, rate)
	}
	checkProblem(t, "alice over her limit", limited, http.StatusTooManyRequests, "urn:followfeed:problem:rate-limited")

	// Bob, from the same address at the same time, has his own full burst.
	for i := range burst {
		if r := c.Do("GET", "/v1/me", bob, nil); r.Status != http.StatusOK {
			t.Fatalf("bob's request %d while alice is limited: %d %s", i+1, r.Status, r.Body)
		}
	}
}

// TestFollowListNewestFirst protects the order of GET /v1/me/follows: newest
// follow first (by creation, not by key or kind), on one page and across
// cursor pages; updating a follow's options does not move it, unfollowing
// and following again does. It fails if the list is ordered by key, kind,
// oldest first, or by last update, or if pages overlap or skip.
func TestFollowListNewestFirst(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "orderly", "")
	// Neither alphabetical nor grouped by kind, so only the creation order
	// explains the expected list.
	created := []string{
		"category/cs.LG",
		"researcher/s2:1741101",
		"category/astro-ph",
		"institution/ror:03dbr7087",
		"category/cs.AI",
		"researcher/orcid:0000-0002-1825-0097",
		"category/stat.ML",
	}
	for _, p := range created {
		if r := c.Do("PUT", "/v1/me/follows/"+p, tok, nil); r.Status != http.StatusCreated {
			t.Fatalf("follow %s: %d %s", p, r.Status, r.Body)
		}
	}
	// An option update of an old follow keeps its place.
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, map[string]any{"label": "ML"}); r.Status != http.StatusOK {
		t.Fatalf("updating cs.LG: %d %s", r.Status, r.Body)
	}
	want := slices.Clone(created)
	slices.Reverse(want)

	list := func(limit string) ([]string, int) {
		t.Helper()
		var got []string
		var last time.Time
		pages, cursor := 0, ""
		for {
			r := c.Do("GET", "/v1/me/follows?limit="+limit+"&cursor="+cursor, tok, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("list: %d %s", r.Status, r.Body)
			}
			var page struct {
				Follows []contractFollow `json:"follows"`
				Next    string           `json:"next"`
			}
			r.JSON(t, &page)
			pages++
			for _, f := range page.Follows {
				if !last.IsZero() && f.CreatedAt.After(last) {
					t.Errorf("%s/%s (created %v) listed after a follow created %v", f.Kind, f.ID, f.CreatedAt, last)
				}
				last = f.CreatedAt
				got = append(got, f.Kind+"/"+f.ID)
			}
			if page.Next == "" || pages > 20 {
				return got, pages
			}
			cursor = page.Next
		}
	}
	if got, pages := list("100"); !slices.Equal(got, want) || pages != 1 {
		t.Errorf("one page (%d pages):\n got  %q\n want %q", pages, got, want)
	}
	if got, pages := list("2"); !slices.Equal(got, want) || pages != 4 {
		t.Errorf("pages of 2 (%d pages, want 4):\n got  %q\n want %q", pages, got, want)
	}

	// Unfollowing and following again makes it the newest.
	c.Do("DELETE", "/v1/me/follows/researcher/s2:1741101", tok, nil)
	if r := c.Do("PUT", "/v1/me/follows/researcher/s2:1741101", tok, nil); r.Status != http.StatusCreated {
		t.Fatalf("follow s2:1741101 again: %d %s", r.Status, r.Body)
	}
	want = append([]string{"researcher/s2:1741101"}, slices.DeleteFunc(want, func(s string) bool { return s == "researcher/s2:1741101" })...)
	if got, _ := list("3"); !slices.Equal(got, want) {
		t.Errorf("after following again:\n got  %q\n want %q", got, want)
	}
}

// hs256 signs claims with the development secret, so a token can carry
// exactly the claims a test wants (testapp.Token cannot send
// email_verified=false: the minter omits a false claim).
func hs256(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	claims["exp"] = time.Now().Add(time.Hour).Unix()
	claims["iat"] = time.Now().Unix()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(config.DevHS256Secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type contractMe struct {
	Email          string `json:"email"`
	EmailConfirmed bool   `json:"email_confirmed"`
}

// TestUnverifiedEmailIsNotRecorded protects account.Users.Ensure: an email
// claim counts only with email_verified true. Tokens saying false (as a JSON
// bool or the string "false"), or not saying it (what `followfeed token
// --unverified` mints), must neither create the user with that address nor
// add it to an existing user without one; otherwise digests would go to an
// address nobody proved. The last step shows the check can see a recorded
// address: a verified token then records it, confirmed.
func TestUnverifiedEmailIsNotRecorded(t *testing.T) {
	t.Parallel()
	a, c := start(t)
	me := func(what, tok string) contractMe {
		t.Helper()
		r := c.Do("GET", "/v1/me", tok, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: GET /v1/me: %d %s", what, r.Status, r.Body)
		}
		var m contractMe
		r.JSON(t, &m)
		return m
	}

	// `followfeed token --unverified`, as a person would mint it.
	var out bytes.Buffer
	getenv := func(k string) string { return a.Env[k] }
	if err := app.Run(context.Background(), []string{"token", "--sub", "unv-cli", "--email", "cli@example.org", "--unverified"}, getenv, &out); err != nil {
		t.Fatalf("followfeed token --unverified: %v", err)
	}
	cli := strings.TrimSpace(out.String())

	for _, tc := range []struct{ what, sub, tok string }{
		{"new user, email_verified false", "unv-new", hs256(t, jwt.MapClaims{"sub": "unv-new", "email": "new@example.org", "email_verified": false})},
		{"new user, email_verified \"false\"", "unv-str", hs256(t, jwt.MapClaims{"sub": "unv-str", "email": "str@example.org", "email_verified": "false"})},
		{"new user, token --unverified", "unv-cli", cli},
	} {
		if m := me(tc.what, tc.tok); m.Email != "" || m.EmailConfirmed {
			t.Errorf("%s: /v1/me has email %q confirmed=%v, want no address", tc.what, m.Email, m.EmailConfirmed)
		}
	}

	// An existing user without an address: a later unverified claim is not
	// adopted either.
	sub := "unv-new"
	later := hs256(t, jwt.MapClaims{"sub": sub, "email": "later@example.org", "email_verified": false})
	if m := me("existing user, email_verified false", later); m.Email != "" || m.EmailConfirmed {
		t.Errorf("existing user: unverified address adopted: %q confirmed=%v", m.Email, m.EmailConfirmed)
	}

	verified := hs256(t, jwt.MapClaims{"sub": sub, "email": "proved@example.org", "email_verified": true})
	if m := me("existing user, email_verified true", verified); m.Email != "proved@example.org" || !m.EmailConfirmed {
		t.Errorf("a verified claim must be recorded as confirmed; /v1/me has %q confirmed=%v", m.Email, m.EmailConfirmed)
	}
}

// TestFollowLimitOverHTTP protects follow.MaxFollows at the API: the
// 5,000th follow is accepted, the next one answers 409 with a problem
// document naming the limit and is not stored, and updating a follow the user
// already has still works at the limit. It fails if the limit is off by one,
// missing, answered with another status (e.g. 500 or 422), or not as
// problem+json.
func TestFollowLimitOverHTTP(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "collector", "")
	if r := c.Do("GET", "/v1/me", tok, nil); r.Status != http.StatusOK { // creates the user
		t.Fatalf("GET /v1/me: %d %s", r.Status, r.Body)
	}
	db := openDB(t, a.DatabaseURL)
	ctx := context.Background()
	// MaxFollows-1 researcher follows straight into the table (the API would
	// take minutes); the follow counts are not needed here.
	tag, err := db.Pool.Exec(ctx, `
		INSERT INTO follows (user_id, key, kind, target)
		SELECT u.id, 'researcher:s2:' || g, 'researcher', 's2:' || g
		FROM users u, generate_series(1, $1::int) g WHERE u.sub = 'collector'`, follow.MaxFollows-1)
	if err != nil || tag.RowsAffected() != follow.MaxFollows-1 {
		t.Fatalf("inserting %d follows: %v (%d rows)", follow.MaxFollows-1, err, tag.RowsAffected())
	}
	count := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM follows f JOIN users u ON u.id = f.user_id WHERE u.sub = 'collector'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil); r.Status != http.StatusCreated {
		t.Fatalf("follow number %d: want 201, got %d %s", follow.MaxFollows, r.Status, r.Body)
	}
	r := c.Do("PUT", "/v1/me/follows/category/cs.AI", tok, nil)
	p := checkProblem(t, "one follow over the limit", r, http.StatusConflict, "urn:followfeed:problem:conflict")
	if !strings.Contains(p.Detail, "5000") {
		t.Errorf("409 detail %q does not name the limit of 5000", p.Detail)
	}
	if n := count(); n != follow.MaxFollows {
		t.Errorf("%d follows stored after the refused one, want %d", n, follow.MaxFollows)
	}
	if r := c.Do("GET", "/v1/follows/category/cs.AI", tok, nil); !strings.Contains(string(r.Body), `"following":false`) {
		t.Errorf("refused follow shows as followed: %s", r.Body)
	}
	// At the limit, a follow the user has can still be updated.
	if r := c.Do("PUT", "/v1/me/follows/researcher/s2:17", tok, map[string]any{"label": "kept"}); r.Status != http.StatusOK {
		t.Errorf("updating an existing follow at the limit: want 200, got %d %s", r.Status, r.Body)
	}
}
