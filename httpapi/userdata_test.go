package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/config"
	"followfeed/database"
	"followfeed/internal/testapp"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// userTable is a table that holds user ids, as the schema says: a column
// user_id or a foreign key to users(id) (direct), or a foreign key to such
// a table (channel_events → channels). The list is read from the catalog,
// so a table a later migration adds is in it.
type userTable struct {
	name string
	// where selects the rows of user $1 (before the erasure: the rows of
	// a table below another are found through its parent's).
	where string
	// pkey is the primary key's columns as a row's text: the rows are
	// told apart by it after the erasure, when their parents are gone.
	pkey string
}

// userTables lists every table of the schema that holds user ids.
func userTables(t *testing.T, db *database.DB) []userTable {
	t.Helper()
	ctx := context.Background()
	// Direct: a column user_id, or a foreign key to users(id).
	direct := map[string]string{"users": "id = $1"}
	rows, err := db.Pool.Query(ctx, `
		SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.column_name = 'user_id'
		UNION
		SELECT conrelid::regclass::text, a.attname FROM pg_constraint k
		JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
		WHERE k.contype = 'f' AND k.confrelid = 'public.users'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		direct[tbl] = col + " = $1"
	}
	rows.Close()
	// Below them: tables with a foreign key to one of them, to a fixed
	// point (channel_attempts → channel_events → channels).
	type fk struct{ child, cols, parent, refcols string }
	rows, err = db.Pool.Query(ctx, `
		SELECT k.conrelid::regclass::text,
		       (SELECT string_agg(a.attname, ', ' ORDER BY i) FROM unnest(k.conkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n),
		       k.confrelid::regclass::text,
		       (SELECT string_agg(a.attname, ', ' ORDER BY i) FROM unnest(k.confkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n)
		FROM pg_constraint k WHERE k.contype = 'f' AND k.connamespace = 'public'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	var fks []fk
	for rows.Next() {
		var f fk
		if err := rows.Scan(&f.child, &f.cols, &f.parent, &f.refcols); err != nil {
			t.Fatal(err)
		}
		fks = append(fks, f)
	}
	rows.Close()
	where := maps.Clone(direct)
	for changed := true; changed; {
		changed = false
		for _, f := range fks {
			pw, ok := where[f.parent]
			if !ok || f.parent == "users" {
				continue
			}
			if _, ok := direct[f.child]; ok {
				continue
			}
			w := "(" + f.cols + ") IN (SELECT " + f.refcols + " FROM " + f.parent + " WHERE " + pw + ")"
			if old, ok := where[f.child]; !ok {
				where[f.child], changed = w, true
			} else if !strings.Contains(old, w) {
				where[f.child], changed = old+" OR "+w, true
			}
		}
	}
	var out []userTable
	for tbl, w := range where {
		var pkey string
		err := db.Pool.QueryRow(ctx, `
			SELECT string_agg(a.attname, ', ' ORDER BY u.i) FROM pg_index x
			CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY u(n, i)
			JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = u.n
			WHERE x.indrelid = $1::regclass AND x.indisprimary`, tbl).Scan(&pkey)
		if err != nil || pkey == "" {
			t.Fatalf("table %s holds user ids and has no primary key (%v): give it one, the erasure test tells rows apart by it", tbl, err)
		}
		out = append(out, userTable{name: tbl, where: w, pkey: pkey})
	}
	slices.SortFunc(out, func(a, b userTable) int { return strings.Compare(a.name, b.name) })
	return out
}

// keysOf are the primary keys (as text) of user id's rows in tbl.
func keysOf(t *testing.T, db *database.DB, tbl userTable, id int64) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT row(`+tbl.pkey+`)::text FROM `+tbl.name+` WHERE `+tbl.where, id)
	if err != nil {
		t.Fatalf("%s: %v", tbl.name, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", tbl.name, err)
	}
	return keys
}

// stillThere counts the rows of tbl whose primary keys are keys.
func stillThere(t *testing.T, db *database.DB, tbl userTable, keys []string) int {
	t.Helper()
	return count(t, db, `SELECT count(*) FROM `+tbl.name+` WHERE row(`+tbl.pkey+`)::text = ANY($1)`, keys)
}

// noCascade makes the database refuse to remove a row of a table with a
// foreign key to users(id) through that key's ON DELETE CASCADE: every
// such row must be gone through its package's eraser (account.OnErase)
// before account deletes the users row. A cascaded delete runs one
// trigger level down (pg_trigger_depth() > 1); an eraser's runs at the
// top.
func noCascade(t *testing.T, db *database.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
		CREATE FUNCTION test_no_user_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF pg_trigger_depth() > 1 THEN
				RAISE EXCEPTION 'a row of % was removed by the users row''s ON DELETE CASCADE: its package needs an eraser (account.Users.OnErase, app/wire.go)', TG_TABLE_NAME;
			END IF;
			RETURN OLD;
		END $$`); err != nil {
		t.Fatal(err)
	}
	tables, err := textColumn(db, `SELECT DISTINCT conrelid::regclass::text FROM pg_constraint WHERE contype = 'f' AND confrelid = 'public.users'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range tables {
		if _, err := db.Pool.Exec(ctx, `CREATE TRIGGER test_no_user_cascade BEFORE DELETE ON `+tbl+` FOR EACH ROW EXECUTE FUNCTION test_no_user_cascade()`); err != nil {
			t.Fatal(err)
		}
	}
}

// textColumn is a query's one text column.
func textColumn(db *database.DB, sql string) ([]string, error) {
	rows, err := db.Pool.Query(context.Background(), sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// dataFixture is a user given, through the service, a row in every table
// that holds a user id.
type dataFixture struct {
	sub, tok, email string
	id              int64
	feeds           feedLinks
	session         *http.Client
	channel         int64
	secret          string // the API channel's signing secret
	secretPath      string // a credential in the API channel's URL
}

// populate signs sub up and uses every feature: follows (a category and a
// researcher), a daily digest sent (digest --now, to MAIL_DIR) and
// unsubscribed from (a suppression), a new unconfirmed address (a
// confirmation request), feedback (a ranking model), a "not this
// person", an instant webhook from the settings page (a secret page not
// yet opened) and one from the API whose URL carries a credential, a test
// event and a matched paper delivered to them, the feed token.
func populate(t *testing.T, a *testapp.App, c *testapp.Client, db *database.DB, rc *receiver, sub, paperID string) *dataFixture {
	t.Helper()
	f := &dataFixture{sub: sub, email: sub + "@example.org"}
	f.tok = testapp.Token(t, sub, f.email)
	ok := func(r *testapp.Response, what string, status int) {
		t.Helper()
		if r.Status != status {
			t.Fatalf("%s %s: %d %s", sub, what, r.Status, r.Body)
		}
	}
	ok(c.Do("PUT", "/v1/me/follows/category/cs.LG", f.tok, nil), "follow cs.LG", 201)
	ok(c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", f.tok, nil), "follow a researcher", 201)
	ok(c.Do("PATCH", "/v1/me", f.tok, map[string]any{"digest": map[string]any{"frequency": "daily"}}), "digests on", 200)
	if err := db.Pool.QueryRow(context.Background(), `SELECT id FROM users WHERE sub = $1`, sub).Scan(&f.id); err != nil {
		t.Fatal(err)
	}
	var b *http.Client
	var csrf string
	b, _, csrf = signIn(t, a, f.tok)
	f.session = b
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"csrf": {csrf}, "type": {"webhook"},
		"url": {rc.URL + "/" + sub}, "mode": {"instant"}})
	secretRedirect(t, resp) // the reveal row stays until the page is opened
	f.secretPath = "/" + sub + "/hooks/T0KEN" + strings.ToUpper(sub) + "SECRETPATH9"
	r := c.Do("POST", "/v1/me/channels", f.tok, map[string]any{"type": "webhook", "url": rc.URL + f.secretPath + "?token=Q" + sub + "querysecret", "mode": "daily"})
	ok(r, "a webhook with a credential in its URL", 201)
	var ch channelOut
	r.JSON(t, &ch)
	f.channel, f.secret = ch.ID, ch.Secret
	var l channelList
	c.Do("GET", "/v1/me/channels", f.tok, nil).JSON(t, &l)
	for _, x := range l.Channels {
		if x.Mode == "instant" {
			ok(c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", x.ID), f.tok, nil), "a test event", 202)
		}
	}
	pushPaper(t, c, fmt.Sprintf(`{"arxiv_id": %q, "title": "Sparse attention for %s", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}], "abstract": "An abstract.", "categories": ["cs.LG"], "primary_category": "cs.LG"}`, paperID, sub))
	matchIdle(t, a, db)
	// The instant channel's collection (due at the match) and delivery.
	waitFor(t, sub+"'s channel to get "+paperID, func() bool {
		return slices.ContainsFunc(rc.got(), func(q recorded) bool { return q.path == "/"+sub && bytes.Contains(q.body, []byte(paperID)) })
	})
	ok(c.Do("PUT", "/v1/me/papers/"+paperID+"/feedback", f.tok, map[string]any{"value": "more"}), "feedback", 200)
	ok(c.Do("POST", "/v1/me/papers/"+paperID+"/not-this-person", f.tok, map[string]any{"id": "openalex:A5023888391"}), "not this person", 204)
	var out bytes.Buffer
	if err := testapp.RunCommand(t, a.Env, &out, "digest", "--user", sub, "--now"); err != nil || !strings.Contains(out.String(), "sent") {
		t.Fatalf("%s: digest --now: %v\n%s", sub, err, out.String())
	}
	// Marked after the digest: a paper marked done is left out of it.
	ok(c.Do("PUT", "/v1/me/papers/"+paperID+"/state", f.tok, map[string]any{"state": "done"}), "read state", 200)
	ok(c.Do("PUT", "/v1/me/remember-opened", f.tok, map[string]any{"remember_opened": true}), "remember what I opened", 200)
	if r := c.Do("POST", strings.TrimPrefix(unsubscribeLink(t, a, sub), a.URL), "", "List-Unsubscribe=One-Click",
		"Content-Type", "application/x-www-form-urlencoded"); r.Status != 200 {
		t.Fatalf("%s: unsubscribe: %d %s", sub, r.Status, r.Body)
	}
	ok(c.Do("POST", "/v1/me/mutes", f.tok, map[string]any{"query": `abs:"dark matter"`, "follow": map[string]any{"kind": "category", "id": "cs.LG"}}), "a mute", 201)
	ok(c.Do("PATCH", "/v1/me", f.tok, map[string]any{"email": sub + ".new@example.org"}), "a new address", 200)
	c.Do("GET", "/v1/me/feeds", f.tok, nil).JSON(t, &f.feeds)
	a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind(), worker.ChannelCollectArgs{}.Kind(), worker.ChannelDeliverArgs{}.Kind(),
		worker.ConfirmArgs{}.Kind(), worker.RankTrainArgs{}.Kind())
	return f
}

// twoUsers is a service with ada and bob populated, and the receiver of
// their webhooks.
func twoUsers(t *testing.T) (*testapp.App, *testapp.Client, *database.DB, *receiver, *dataFixture, *dataFixture) {
	t.Helper()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	db := openDB(t, a.DatabaseURL)
	rc := newReceiver(t)
	return a, c, db, rc, populate(t, a, c, db, rc, "ada", "2611.00001"), populate(t, a, c, db, rc, "bob", "2611.00002")
}

// signedLinks are every kind of link a mail of f's carries, made as the
// service makes them, and the settings page: each must answer 200 now (the
// open link 303, on to the paper).
func signedLinks(t *testing.T, a *testapp.App, db *database.DB, f *dataFixture, paperID string) map[string]string {
	t.Helper()
	var epoch, pid int64
	var email string
	if err := db.Pool.QueryRow(context.Background(), `SELECT link_epoch, email FROM users WHERE id = $1`, f.id).Scan(&epoch, &email); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(context.Background(), `SELECT id FROM papers WHERE arxiv_id = $1`, paperID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(a.URL)
	addrs := account.NewAddresses(db, auth.NewLinkSigner([]byte(config.DevSecretKey)), base, nil)
	links := map[string]string{
		"manage":      addrs.ManageURL(f.id, epoch),
		"unsubscribe": addrs.UnsubscribeURL(f.id, epoch),
		"confirm":     addrs.ConfirmURL(f.id, epoch, email),
		"dispute":     addrs.DisputeURL(f.id, epoch, paperID, "openalex:A5023888391"),
		"feedback":    addrs.FeedbackURL(f.id, epoch, pid, "less"),
		"open":        addrs.OpenURL(f.id, epoch, pid),
	}
	for k, v := range links {
		links[k] = strings.TrimSuffix(strings.TrimPrefix(v, a.URL), "#email")
	}
	return links
}

// TestErasureEmptiesEveryUserTable is issue #27's "done when": DELETE
// /v1/me erases the user from every table that holds a user id (listed
// from the schema: a later table is caught, and each must first hold rows
// of the test's users, so the test is made to give them some), each
// through its package's eraser, not through the users row's cascade; the
// other user's rows all stay. The feed URLs and every kind of signed link
// answer 404 at once, the settings session is signed out, follower counts
// drop, the suppressed address is kept only as a hash (and still holds
// for a new user with it), and the jobs queued for the erased user end
// without sending or failing.
func TestErasureEmptiesEveryUserTable(t *testing.T) {
	t.Parallel()
	a, c, db, rc, ada, bob := twoUsers(t)
	noCascade(t, db)

	tables := userTables(t, db)
	// database.IsUserGone (a write for a user erased meanwhile: a 404, or
	// a job's "nothing to do") knows a reference to users by its name.
	names, err := textColumn(db, `SELECT conname::text FROM pg_constraint WHERE contype = 'f' AND confrelid = 'public.users'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, "_user_id_fkey") {
			t.Errorf("foreign key %s references users(id): name its column user_id (database.IsUserGone reads <table>_user_id_fkey)", n)
		}
	}
	t.Logf("tables holding user ids: %v", func() (names []string) {
		for _, tbl := range tables {
			names = append(names, tbl.name)
		}
		return
	}())
	keys := map[string][2][]string{}
	for _, tbl := range tables {
		k := [2][]string{keysOf(t, db, tbl, ada.id), keysOf(t, db, tbl, bob.id)}
		if len(k[0]) == 0 || len(k[1]) == 0 {
			t.Errorf("table %s holds user ids, but the test gave ada %d rows and bob %d: populate it through the service (populate), and give its package an eraser (account.Users.OnErase in app/wire.go)",
				tbl.name, len(k[0]), len(k[1]))
		}
		keys[tbl.name] = k
	}
	links := signedLinks(t, a, db, ada, "2611.00001")
	for name, path := range links {
		want := 200
		if name == "open" {
			want = 303 // on to the paper
		}
		if r := c.Do("GET", path, "", nil); r.Status != want {
			t.Fatalf("ada's %s link before the erasure: %d", name, r.Status)
		}
	}
	followers := func(kind, id string) int64 {
		var st struct{ Followers int64 }
		c.Do("GET", "/v1/follows/"+kind+"/"+id, "", nil).JSON(t, &st)
		return st.Followers
	}
	if n := followers("category", "cs.LG"); n != 2 {
		t.Fatalf("cs.LG has %d followers before the erasure, want 2", n)
	}
	before := len(rc.got())

	if r := c.Do("DELETE", "/v1/me", ada.tok, nil); r.Status != 204 {
		t.Fatalf("DELETE /v1/me: %d %s", r.Status, r.Body)
	}

	for _, tbl := range tables {
		k := keys[tbl.name]
		if n := stillThere(t, db, tbl, k[0]); n != 0 {
			t.Errorf("%s: %d of ada's %d rows left after the erasure", tbl.name, n, len(k[0]))
		}
		if n := stillThere(t, db, tbl, k[1]); n != len(k[1]) {
			t.Errorf("%s: %d of bob's %d rows left after ada's erasure", tbl.name, n, len(k[1]))
		}
	}
	if n, m := followers("category", "cs.LG"), followers("researcher", "openalex:A5023888391"); n != 1 || m != 1 {
		t.Errorf("followers after the erasure: cs.LG %d, the researcher %d; want 1 each", n, m)
	}
	for _, u := range []string{ada.feeds.Atom, ada.feeds.RSS, ada.feeds.JSON, ada.feeds.OPML, ada.feeds.Follows[0].Atom} {
		if r := c.Do("GET", strings.TrimPrefix(u, a.URL), "", nil); r.Status != 404 {
			t.Errorf("ada's feed %s after the erasure: %d", u, r.Status)
		}
	}
	if r := c.Do("GET", strings.TrimPrefix(bob.feeds.Atom, a.URL), "", nil); r.Status != 200 {
		t.Errorf("bob's feed after ada's erasure: %d", r.Status)
	}
	for name, path := range links {
		if r := c.Do("GET", path, "", nil); r.Status != 404 {
			t.Errorf("ada's %s link after the erasure: %d", name, r.Status)
		}
	}
	if resp, _ := testapp.Form(t, ada.session, "GET", a.URL+"/settings", nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("ada's settings session after the erasure: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := testapp.Form(t, bob.session, "GET", a.URL+"/settings/follows", nil); resp.StatusCode != 200 {
		t.Errorf("bob's settings session after ada's erasure: %d", resp.StatusCode)
	}

	// Only the suppression stays, as a hash: no text of ada's addresses
	// anywhere in it, and a new user with her address is still paused.
	if n := count(t, db, `SELECT count(*) FROM suppressions WHERE email ILIKE '%ada%' OR detail ILIKE '%ada%'`); n != 0 {
		t.Errorf("%d suppressions hold ada's address as text", n)
	}
	if n := count(t, db, `SELECT count(*) FROM suppressions WHERE email IS NULL AND email_sha256 = sha256('ada@example.org')`); n != 1 {
		t.Errorf("%d hash-only suppressions of ada's address, want 1", n)
	}
	var me struct{ Suppressed string }
	c.Do("GET", "/v1/me", testapp.Token(t, "ada-again", "ada@example.org"), nil).JSON(t, &me)
	if me.Suppressed != "unsubscribe" {
		t.Errorf("a new user with the erased user's unsubscribed address: suppressed %q", me.Suppressed)
	}

	// A new match: bob's instant channel gets it, nothing goes to ada's;
	// no job fails for the erased user.
	pushPaper(t, c, paperLine("2611.00003", "After the erasure", "cs.LG"))
	waitFor(t, "bob's channel to get the paper matched after ada's erasure", func() bool {
		return slices.ContainsFunc(rc.got()[before:], func(q recorded) bool { return q.path == "/bob" && bytes.Contains(q.body, []byte("2611.00003")) })
	})
	a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind(), worker.ChannelCollectArgs{}.Kind(), worker.ChannelDeliverArgs{}.Kind(),
		worker.ConfirmArgs{}.Kind(), worker.RankTrainArgs{}.Kind())
	for _, q := range rc.got()[before:] {
		if strings.HasPrefix(q.path, "/ada") {
			t.Errorf("a request to ada's channel after the erasure: %s", q.path)
		}
	}
	for _, kind := range []string{worker.ChannelDeliverArgs{}.Kind(), worker.ChannelCollectArgs{}.Kind(), worker.ConfirmArgs{}.Kind(), worker.RankTrainArgs{}.Kind()} {
		if n := testjobs.Count(t, db.Pool, kind, rivertype.JobStateRetryable, rivertype.JobStateDiscarded); n != 0 {
			t.Errorf("%d %s jobs failed", n, kind)
		}
	}
	if strings.Contains(a.Logs(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", a.Logs())
	}
}

// TestExportHasEverySectionAndNoSecret: GET /v1/me/export (and the
// settings page's download) holds the profile, the follows with their
// names, the feedback, the "not this person" corrections, the channels
// and the digest ledger, and none of the channels' credentials (signing
// secret, a token in a webhook's URL path or query) nor the feed token;
// another user's data is not in it.
func TestExportHasEverySectionAndNoSecret(t *testing.T) {
	t.Parallel()
	a, c, _, _, ada, _ := twoUsers(t)

	r := c.Do("GET", "/v1/me/export", ada.tok, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("GET /v1/me/export: %d %v", r.Status, r.Header)
	}
	var doc struct {
		Format   string
		Profile  struct{ Sub, Email, Suppressed string }
		Follows  []struct{ Kind, ID, Name string }
		Feedback []struct {
			ArxivID string `json:"arxiv_id"`
			Value   string
		}
		Disputes []struct {
			ArxivID string `json:"arxiv_id"`
			ID      string
		}
		Channels []struct {
			Type, URL, Mode, Secret string
		}
		Digests []struct {
			Kind, Period, State string
			Papers              int
		}
		ReadState []struct {
			ArxivID   string `json:"arxiv_id"`
			State     string
			ChangedAt string `json:"changed_at"`
		} `json:"read_state"`
		Mutes []struct {
			Kind, Query string
			Follow      struct{ Kind, ID string }
		}
	}
	r.JSON(t, &doc)
	if len(doc.ReadState) != 1 || doc.ReadState[0].ArxivID != "2611.00001" || doc.ReadState[0].State != "done" || doc.ReadState[0].ChangedAt == "" {
		t.Errorf("read state: %+v", doc.ReadState)
	}
	if doc.Format != "followfeed-export/1" || doc.Profile.Sub != "ada" || doc.Profile.Email != "ada.new@example.org" {
		t.Errorf("format and profile: %+v", doc)
	}
	if len(doc.Follows) != 2 || doc.Follows[0].Name == "" || doc.Follows[1].Name == "" {
		t.Errorf("follows: %+v", doc.Follows)
	}
	if len(doc.Feedback) != 1 || doc.Feedback[0].ArxivID != "2611.00001" || doc.Feedback[0].Value != "more" {
		t.Errorf("feedback: %+v", doc.Feedback)
	}
	if len(doc.Disputes) != 1 || doc.Disputes[0].ArxivID != "2611.00001" || doc.Disputes[0].ID != "openalex:A5023888391" {
		t.Errorf("disputes: %+v", doc.Disputes)
	}
	if len(doc.Channels) != 2 || doc.Channels[0].URL == "" || doc.Channels[1].URL == "" {
		t.Errorf("channels: %+v", doc.Channels)
	}
	if len(doc.Digests) != 1 || doc.Digests[0].Kind != "daily" || doc.Digests[0].Period == "" || doc.Digests[0].State != "sent" || doc.Digests[0].Papers != 1 {
		t.Errorf("digests: %+v", doc.Digests)
	}
	if len(doc.Mutes) != 1 || doc.Mutes[0].Kind != "query" || doc.Mutes[0].Query != `abs:"dark matter"` || doc.Mutes[0].Follow.ID != "cs.LG" {
		t.Errorf("mutes: %+v", doc.Mutes)
	}
	raw := string(r.Body)
	token := strings.TrimSuffix(strings.TrimPrefix(ada.feeds.Atom, a.URL+"/feeds/"), ".atom")
	for what, secret := range map[string]string{
		"the signing secret":           ada.secret,
		"the whsec_ prefix of secrets": "whsec_",
		"the URL's path credential":    "T0KENADASECRETPATH9",
		"the URL's query credential":   "Qadaquerysecret",
		"the feed token":               token,
		"bob's data":                   "bob",
	} {
		if secret == "" || strings.Contains(raw, secret) {
			t.Errorf("the export holds %s (%q)", what, secret)
		}
	}

	resp, page := testapp.Form(t, ada.session, "GET", a.URL+"/settings/account", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, `href="/settings/export"`) || !strings.Contains(page, `href="/settings/erase"`) {
		t.Fatalf("the settings page has no download or erase link: %d", resp.StatusCode)
	}
	resp, body := testapp.Form(t, ada.session, "GET", a.URL+"/settings/export", nil)
	var again, api map[string]json.RawMessage
	r.JSON(t, &api) // the API's sections: the same document
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != `attachment; filename="followfeed-data.json"` ||
		json.Unmarshal([]byte(body), &again) != nil || len(again) != len(api) || len(api) < 11 || strings.Contains(body, ada.secret) {
		t.Errorf("the settings page's download: %d %v %d sections", resp.StatusCode, resp.Header, len(again))
	}
	if resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+"/settings/export", nil); resp.StatusCode != 303 {
		t.Errorf("the download signed out: %d", resp.StatusCode)
	}
}

// TestHostErasesAUserItDeleted: DELETE /v1/users/{sub} needs a service
// token with scope users:write (none is a 401, a user's token or one with
// papers:write only a 403 saying what is missing, and erases nothing); it
// erases the user as DELETE /v1/me does, and answers 204 again, and for a
// subject followfeed never knew. A users:write token cannot act as a user
// or push papers. A subject no token could carry is a 422 naming sub.
func TestHostErasesAUserItDeleted(t *testing.T) {
	t.Parallel()
	t.Log("hostile: access")
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	ada := testapp.Token(t, "auth0|ada", "ada@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", ada, nil)
	c.Do("PUT", "/v1/me/follows/category/cs.LG", testapp.Token(t, "bob", ""), nil)
	followers := func() int64 {
		var st struct{ Followers int64 }
		c.Do("GET", "/v1/follows/category/cs.LG", "", nil).JSON(t, &st)
		return st.Followers
	}
	users := testapp.Token(t, "host-site", "", "users:write")
	papers := testapp.Token(t, "host-site", "", "papers:write")
	path := "/v1/users/" + url.PathEscape("auth0|ada")
	for _, tc := range []struct {
		name, tok string
		status    int
		detail    string
	}{
		{"no token", "", 401, "users:write"},
		{"a user's token", ada, 403, "this is a user token"},
		{"a papers:write token", papers, 403, "needs a service token with scope users:write; this is a token with scope papers:write"},
	} {
		r := c.Do("DELETE", path, tc.tok, nil)
		var p problem
		r.JSON(t, &p)
		if r.Status != tc.status || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, r.Status, p.Detail, tc.status, tc.detail)
		}
	}
	if n := followers(); n != 2 {
		t.Fatalf("refused requests erased something: %d followers", n)
	}
	if r := c.Do("GET", "/v1/me", users, nil); r.Status != 403 || !strings.Contains(string(r.Body), "cannot act as a user") {
		t.Errorf("a users:write token as a user: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/papers", users, "[]"); r.Status != 403 || !strings.Contains(string(r.Body), "papers:write") {
		t.Errorf("a users:write token pushing papers: %d %s", r.Status, r.Body)
	}
	if r := c.Do("DELETE", path, users, nil); r.Status != 204 {
		t.Fatalf("DELETE %s: %d %s", path, r.Status, r.Body)
	}
	if n := followers(); n != 1 {
		t.Errorf("followers after the host erased ada: %d, want 1", n)
	}
	for _, sub := range []string{"auth0|ada", "never-seen"} {
		if r := c.Do("DELETE", "/v1/users/"+url.PathEscape(sub), users, nil); r.Status != 204 {
			t.Errorf("DELETE /v1/users/%s again: %d %s", sub, r.Status, r.Body)
		}
	}
	for _, sub := range []string{strings.Repeat("x", 256), "a%00b"} {
		r := c.Do("DELETE", "/v1/users/"+sub, users, nil)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != "sub" {
			t.Errorf("DELETE /v1/users/%.20s: %d %s, want 422 naming sub", sub, r.Status, r.Body)
		}
	}
}

// TestSettingsPageErasesTheAccount: the settings page's erase link opens
// a page saying what goes (follows, channels) and what stays (an
// unsubscribed address, as a hash); its form without the session's CSRF
// token erases nothing; with it the account is erased, the cookie
// cleared, the session signed out, and the follower counts drop. A
// manage link from a mail opens neither the page nor the download.
func TestSettingsPageErasesTheAccount(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "ada", "ada@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/category/astro-ph.GA", tok, nil)
	b, _, csrf := signIn(t, a, tok)
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/erase", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "your follows (2)") || !strings.Contains(page, "your push channels (0)") ||
		!strings.Contains(page, "ada@example.org asked us to stop mailing it") || !strings.Contains(page, `action="/settings/erase"`) {
		t.Fatalf("the erase page: %d\n%s", resp.StatusCode, page)
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/erase", url.Values{}); resp.StatusCode != 403 {
		t.Errorf("the form without its CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/erase", url.Values{"csrf": {csrf}}); resp.StatusCode != 200 {
		t.Fatal("the form with its CSRF token did not erase")
	} else if c := sessionCookieOf(resp); c == nil || c.MaxAge >= 0 {
		t.Errorf("the session cookie was not cleared: %v", c)
	}
	var st struct{ Followers int64 }
	c.Do("GET", "/v1/follows/category/astro-ph.GA", "", nil).JSON(t, &st)
	if st.Followers != 0 {
		t.Errorf("astro-ph.GA has %d followers after the erasure", st.Followers)
	}
	for _, p := range []string{"/settings", "/settings/erase", "/settings/export"} {
		if resp, _ := testapp.Form(t, b, "GET", a.URL+p, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
			t.Errorf("GET %s after the erasure: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// A manage link is not a session.
	bob := testapp.Token(t, "bob", "bob@example.org")
	c.Do("GET", "/v1/me", bob, nil)
	db := openDB(t, a.DatabaseURL)
	var id, epoch int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = 'bob'`).Scan(&id, &epoch); err != nil {
		t.Fatal(err)
	}
	manage := url.QueryEscape(auth.NewLinkSigner([]byte(config.DevSecretKey)).Sign(auth.Link{Action: auth.ActionManage, UserID: id, Epoch: epoch}))
	for _, p := range []string{"/settings/erase?token=" + manage, "/settings/export?token=" + manage} {
		if resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+p, nil); resp.StatusCode != 303 {
			t.Errorf("GET %s with a manage link: %d", p, resp.StatusCode)
		}
	}
	form := url.Values{"token": {manage}}
	if resp, _ := testapp.Form(t, testapp.FormClient(t), "POST", a.URL+"/settings/erase", form); resp.StatusCode != 303 {
		t.Errorf("POST /settings/erase with a manage link: %d", resp.StatusCode)
	}
	if r := c.Do("GET", "/v1/me", bob, nil); r.Status != 200 {
		t.Errorf("bob after the manage-link attempts: %d", r.Status)
	}
}

// TestAWriteForAUserErasedMeanwhileIs404: a request that found its user
// and then writes after the user was erased (here a trigger erases the
// user in the very statement that writes the feedback: the foreign key
// fails) is a 404 saying the account was erased, not a 500.
func TestAWriteForAUserErasedMeanwhileIs404(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	pushPaper(t, c, paperLine("2611.00001", "Sparse attention", "cs.LG"))
	tok := testapp.Token(t, "ada", "")
	c.Do("GET", "/v1/me", tok, nil)
	db := openDB(t, a.DatabaseURL)
	if _, err := db.Pool.Exec(context.Background(), `
		CREATE FUNCTION test_erase_first() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN DELETE FROM users WHERE id = NEW.user_id; RETURN NEW; END $$;
		CREATE TRIGGER test_erase_first BEFORE INSERT ON feedback FOR EACH ROW EXECUTE FUNCTION test_erase_first()`); err != nil {
		t.Fatal(err)
	}
	r := c.Do("PUT", "/v1/me/papers/2611.00001/feedback", tok, map[string]any{"value": "more"})
	var p problem
	r.JSON(t, &p)
	if r.Status != 404 || !strings.Contains(p.Detail, "erased") {
		t.Errorf("feedback for a user erased meanwhile: %d %s", r.Status, r.Body)
	}
}
