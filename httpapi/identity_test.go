package httpapi_test

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testapp"
)

type identityBody struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	OtherNames []string `json:"other_names"`
	IDs        []string `json:"ids"`
	Followers  int64    `json:"followers"`
	Following  *bool    `json:"following"`
}

// The whole path through the service: the host registers a person, a
// user who followed the host's id gets the papers pushed earlier under
// the OpenAlex id, names come from the registry everywhere, and lookups
// and the Follow button agree whichever id they use.
func TestRegistryRoutesLinkIDsIntoOnePerson(t *testing.T) {
	t.Parallel()
	a, c := start(t)
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", testapp.Token(t, "second", ""), nil)
	push := `{"arxiv_id": "2202.02326v1", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "M. Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`
	if r := c.Do("POST", "/v1/papers", svc, push, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("push %d %s", r.Status, r.Body)
	}
	before := feedVersion(t, db, "reader")

	// A user token may not write the registry.
	rec := `[{"ids": ["host:1955166", "openalex:A5023888391", "s2:1741101"], "name": "Mingzhi Wen", "other_names": ["M. Wen"]}]`
	if r := c.Do("PUT", "/v1/researchers", reader, rec); r.Status != 403 {
		t.Errorf("user token: %d", r.Status)
	}
	r := c.Do("PUT", "/v1/researchers", svc, rec)
	var res struct {
		Received, Updated int
		Merges            []any
	}
	r.JSON(t, &res)
	if r.Status != 200 || res.Received != 1 || res.Updated != 1 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	if feedVersion(t, db, "reader") == before {
		t.Error("the link did not bump the follower's feed")
	}

	// Lookups under every id: one person, counted once per user.
	for _, id := range []string{"host:1955166", "1955166", "s2:1741101", "https:%2F%2Fopenalex.org%2FA5023888391"} {
		var got identityBody
		r := c.Do("GET", "/v1/researchers/"+id, reader, nil)
		r.JSON(t, &got)
		if r.Status != 200 || got.ID != "openalex:A5023888391" || got.Name != "Mingzhi Wen" || len(got.IDs) != 3 ||
			got.Followers != 2 || got.Following == nil || !*got.Following {
			t.Errorf("GET %s: %d %s", id, r.Status, r.Body)
		}
		var st struct {
			Name      string
			Followers int64
			Following *bool
		}
		r = c.Do("GET", "/v1/follows/researcher/"+id, reader, nil)
		r.JSON(t, &st)
		if st.Name != "Mingzhi Wen" || st.Followers != 2 || st.Following == nil || !*st.Following {
			t.Errorf("follow status %s: %s", id, r.Body)
		}
	}
	if r := c.Do("GET", "/v1/researchers/host:404", "", nil); r.Status != 404 {
		t.Errorf("unknown id: %d", r.Status)
	}

	// Names where the user reads: the follow list, the private feed's
	// reason, the public feed's title.
	var list struct {
		Follows []struct{ ID, Name string }
	}
	c.Do("GET", "/v1/me/follows", reader, nil).JSON(t, &list)
	if len(list.Follows) != 1 || list.Follows[0].Name != "Mingzhi Wen" {
		t.Errorf("follow list %+v", list)
	}
	var links struct{ JSON string }
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	feed := c.Do("GET", strings.TrimPrefix(links.JSON, a.URL), "", nil)
	var jf struct {
		Items []struct {
			ID          string `json:"id"`
			ContentText string `json:"content_text"`
		}
	}
	json.Unmarshal(feed.Body, &jf)
	if len(jf.Items) != 1 || !strings.Contains(jf.Items[0].ContentText, "Following: Mingzhi Wen") {
		t.Errorf("private feed %s", feed.Body)
	}
	pub := c.Do("GET", "/feeds/researcher/s2:1741101.atom", "", nil)
	if pub.Status != 200 || !strings.Contains(string(pub.Body), "<title>New papers by Mingzhi Wen</title>") ||
		!strings.Contains(string(pub.Body), "Towards Training Reproducible") {
		t.Errorf("public feed under another id: %d %.600s", pub.Status, pub.Body)
	}

	// Not this person: the paper leaves the user's feed; the host sees it.
	if r := c.Do("POST", "/v1/me/papers/2202.02326/not-this-person", reader, `{"id": "host:1955166"}`); r.Status != 204 {
		t.Fatalf("not this person: %d %s", r.Status, r.Body)
	}
	feed = c.Do("GET", strings.TrimPrefix(links.JSON, a.URL), "", nil)
	if strings.Contains(string(feed.Body), "Towards Training Reproducible") {
		t.Errorf("disputed paper still in the feed: %s", feed.Body)
	}
	var ds struct {
		Disputes []struct{ ArxivID, ID string }
	}
	r = c.Do("GET", "/v1/researchers/openalex:A5023888391/disputes", svc, nil)
	r.JSON(t, &ds)
	if r.Status != 200 || len(ds.Disputes) != 1 || ds.Disputes[0].ID != "host:1955166" {
		t.Errorf("disputes %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/v1/researchers/host:1955166/disputes", reader, nil); r.Status != 403 {
		t.Errorf("disputes with a user token: %d", r.Status)
	}

	// A split takes the id off again.
	r = c.Do("DELETE", "/v1/researchers/host:1955166/ids/s2:1741101", svc, nil)
	var after identityBody
	r.JSON(t, &after)
	if r.Status != 200 || len(after.IDs) != 2 {
		t.Errorf("split %d %s", r.Status, r.Body)
	}
	if r := c.Do("DELETE", "/v1/researchers/host:1955166/ids/s2:1741101", svc, nil); r.Status != 404 {
		t.Errorf("second split %d %s", r.Status, r.Body)
	}
}

// A batch with one bad record is refused whole: 422 naming the record
// and field, nothing written; a merge is reported.
func TestRegistryBatchesAreAllOrNothingAndReportMerges(t *testing.T) {
	t.Parallel()
	t.Log("hostile: a registry batch with one bad record writes nothing and names the record and field")
	a, c := start(t)
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	bad := `{"ids": ["host:1"], "name": "Fine"}` + "\n" + `{"ids": ["ror:05ppvf150"]}` + "\n" + `{"ids": ["host:2"], "name": "` + strings.Repeat("n", 301) + `"}`
	r := c.Do("PUT", "/v1/researchers", svc, bad, "Content-Type", "application/x-ndjson")
	var p struct {
		Errors []struct {
			Index int
			Field string
		}
	}
	r.JSON(t, &p)
	if r.Status != 422 || len(p.Errors) != 2 || p.Errors[0].Index != 1 || p.Errors[0].Field != "ids[0]" || p.Errors[1].Field != "name" {
		t.Errorf("bad batch: %d %s", r.Status, r.Body)
	}
	var n int
	db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM identities`).Scan(&n)
	if n != 0 {
		t.Errorf("%d identities written by a refused batch", n)
	}
	c.Do("PUT", "/v1/institutions", svc, `[{"ids": ["ror:05ppvf150"], "name": "Impactstory"}, {"ids": ["openalex:I4210166736"]}]`)
	r = c.Do("PUT", "/v1/institutions", svc, `[{"ids": ["ror:05ppvf150", "openalex:I4210166736"], "country": "US"}]`)
	var res struct {
		Merges []struct {
			Index  int
			Into   string
			Merged []string
		}
	}
	r.JSON(t, &res)
	if r.Status != 200 || len(res.Merges) != 1 || res.Merges[0].Into != "ror:05ppvf150" || len(res.Merges[0].Merged) != 2 {
		t.Errorf("merge: %d %s", r.Status, r.Body)
	}
	for _, body := range []string{"", "[", `[{"ids": ["host:1"]}]`} {
		if r := c.Do("PUT", "/v1/institutions", svc, body); r.Status/100 != 4 {
			t.Errorf("%q: %d", body, r.Status)
		}
	}
	if r := c.Do("PUT", "/v1/institutions", "", `[]`); r.Status != 401 {
		t.Errorf("no token: %d", r.Status)
	}
}

// The settings page's digest preview has a "Not by …?" button beside a
// researcher match, named from the registry; pressing it (a CSRF-checked
// form) takes the paper out of the preview and records the dispute.
func TestSettingsPreviewNotThisPerson(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0")
	svc := testapp.Token(t, "host-site", "", "papers:write")
	tok := testapp.Token(t, "settler", "settler@example.org")
	c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391"], "name": "Mingzhi Wen"}]`)
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", tok, nil)
	c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "M. Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}]`)
	b, _, _ := signIn(t, a, tok)
	var page string
	waitFor(t, "the paper in the preview", func() bool {
		_, page = testapp.Form(t, b, "GET", a.URL+"/settings/email", nil)
		return strings.Contains(page, "Towards Training Reproducible")
	})
	follows, _ := settingsPage(t, a, b, "/settings/follows")
	if !strings.Contains(page, "Not by Mingzhi Wen?") || !strings.Contains(follows, `<span class="follow-name">Mingzhi Wen</span>`) {
		t.Fatalf("settings page lacks the registry's name or the button:\n%s", page)
	}
	csrf := testapp.CSRF.FindStringSubmatch(page)[1]
	form := url.Values{"arxiv_id": {"2202.02326"}, "id": {"host:1955166"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/not-this-person", form); resp.StatusCode != 403 {
		t.Errorf("without the CSRF token: %d", resp.StatusCode)
	}
	form.Set("csrf", csrf)
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/not-this-person", form)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/email?done=disputed" {
		t.Fatalf("dispute: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/email?done=disputed", nil)
	if strings.Contains(page, "Towards Training Reproducible") || !strings.Contains(page, "no longer shows for that researcher") {
		t.Errorf("after the dispute:\n%s", page)
	}
	var ds struct {
		Disputes []struct {
			ArxivID string `json:"arxiv_id"`
		}
	}
	c.Do("GET", "/v1/researchers/host:1955166/disputes", svc, nil).JSON(t, &ds)
	if len(ds.Disputes) != 1 {
		t.Errorf("disputes %+v", ds)
	}
	form.Set("id", "not an id")
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/not-this-person", form); resp.StatusCode != 422 {
		t.Errorf("bad id: %d", resp.StatusCode)
	}
}

// A digest has a signed "Not by …?" link beside a researcher match; its
// page only shows a button, the POST records the dispute without a
// session, and a forged token is a 404 page.
func TestDigestNotThisPersonLink(t *testing.T) {
	t.Parallel()
	smtpd := fakesmtp.Start(t, fakesmtp.Options{})
	env := testapp.Env(t)
	env["SMTP_URL"] = smtpd.URL()
	a := testapp.Start(t, env)
	c := a.Client(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	reader := testapp.Token(t, "mailreader", "mailreader@example.org")
	c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391"], "name": "Mingzhi Wen"}]`)
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", reader, nil)
	c.Do("PATCH", "/v1/me", reader, map[string]any{"digest": map[string]any{"frequency": "daily"}})
	c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "M. Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}]`)
	if _, err := commandDigest(t, a, "mailreader"); err != nil {
		t.Fatal(err)
	}
	msgs := smtpd.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	raw := string(msgs[0].Data)
	link := regexp.MustCompile(`/not-this-person/ffl_[A-Za-z0-9_.-]+`).FindString(raw)
	if link == "" || !strings.Contains(raw, "Not by Mingzhi Wen?") {
		t.Fatalf("no dispute link in the digest:\n%s", raw)
	}
	b := testapp.FormClient(t)
	resp, page := testapp.Form(t, b, "GET", a.URL+link, nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "2202.02326") {
		t.Fatalf("dispute page: %d\n%s", resp.StatusCode, page)
	}
	// It names the person followed and links the paper to check, not
	// only ids.
	if !strings.Contains(page, "<strong>Mingzhi Wen</strong>, whom you follow (host:1955166)") || !strings.Contains(page, `href="https://arxiv.org/abs/2202.02326"`) ||
		!strings.Contains(page, "“Towards Training Reproducible Deep Learning Models” (arXiv 2202.02326)") {
		t.Errorf("the dispute page does not name the person or link the paper by its title:\n%s", page)
	}
	var ds struct {
		Disputes []struct {
			ArxivID string `json:"arxiv_id"`
		}
	}
	c.Do("GET", "/v1/researchers/host:1955166/disputes", svc, nil).JSON(t, &ds)
	if len(ds.Disputes) != 0 {
		t.Fatal("loading the page recorded a dispute")
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+link, url.Values{}); resp.StatusCode != 200 {
		t.Fatalf("dispute: %d", resp.StatusCode)
	}
	c.Do("GET", "/v1/researchers/host:1955166/disputes", svc, nil).JSON(t, &ds)
	if len(ds.Disputes) != 1 || ds.Disputes[0].ArxivID != "2202.02326" {
		t.Errorf("disputes %+v", ds)
	}
	// Opened again, the link says it was done, and offers no button.
	if _, page := testapp.Form(t, b, "GET", a.URL+link, nil); !strings.Contains(page, `<p id="disputed">You told us on `) || strings.Contains(page, `id="dispute"`) {
		t.Errorf("the dispute page after the dispute:\n%s", page)
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+link[:len(link)-3]+"AAA", url.Values{}); resp.StatusCode != 404 {
		t.Errorf("forged link: %d", resp.StatusCode)
	}
}

// dblp person ids carry a slash: URL-encoded (%2F) they work in every
// route that takes an id — follows, lookups, splits, public feeds — and a
// malformed one is a 422 naming the expected form.
func TestDBLPIDsThroughTheAPI(t *testing.T) {
	t.Parallel()
	t.Log("hostile: a malformed dblp person id is a 422 naming the expected form")
	a, c := start(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	reader := testapp.Token(t, "reader", "")
	r := c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["https://dblp.org/pid/46/5782.html", "dblp:w/MingzhiWen", "s2:1741101"], "name": "Mingzhi Wen"}]`)
	if r.Status != 200 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/follows/researcher/dblp:46%2F5782", reader, nil); r.Status/100 != 2 {
		t.Fatalf("follow %d %s", r.Status, r.Body)
	}
	push := `{"arxiv_id": "2202.02326v1", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "M. Wen", "ids": ["s2:1741101"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`
	if r := c.Do("POST", "/v1/papers", svc, push, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("push %d %s", r.Status, r.Body)
	}
	var list struct {
		Follows []struct{ ID, Name string }
	}
	c.Do("GET", "/v1/me/follows", reader, nil).JSON(t, &list)
	if len(list.Follows) != 1 || list.Follows[0].ID != "dblp:46/5782" || list.Follows[0].Name != "Mingzhi Wen" {
		t.Errorf("follow list %+v", list)
	}
	var got identityBody
	r = c.Do("GET", "/v1/researchers/dblp:w%2FMingzhiWen", reader, nil)
	r.JSON(t, &got)
	// dblp ranks above Semantic Scholar for the canonical id.
	if r.Status != 200 || got.ID != "dblp:46/5782" || got.Name != "Mingzhi Wen" || len(got.IDs) != 3 || got.Followers != 1 || !*got.Following {
		t.Errorf("lookup: %d %s", r.Status, r.Body)
	}
	pub := c.Do("GET", "/feeds/researcher/dblp:46%2F5782.atom", "", nil)
	if pub.Status != 200 || !strings.Contains(string(pub.Body), "Towards Training Reproducible") ||
		!strings.Contains(string(pub.Body), `href="`+a.URL+`/feeds/researcher/dblp:46%2F5782.atom"`) ||
		!strings.Contains(string(pub.Body), `href="https://dblp.org/pid/46/5782"`) {
		t.Errorf("public feed: %d %.900s", pub.Status, pub.Body)
	}
	var links struct{ JSON string }
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	if feed := c.Do("GET", strings.TrimPrefix(links.JSON, a.URL), "", nil); !strings.Contains(string(feed.Body), "Following: Mingzhi Wen") {
		t.Errorf("private feed %s", feed.Body)
	}
	r = c.Do("DELETE", "/v1/researchers/s2:1741101/ids/dblp:w%2FMingzhiWen", svc, nil)
	if r.JSON(t, &got); r.Status != 200 || len(got.IDs) != 2 {
		t.Errorf("split %d %s", r.Status, r.Body)
	}
	for _, bad := range []string{"dblp:46%2F57a2", "dblp:4605%2F5782", "dblp:W%2FMingzhiWen", "dblp:46"} {
		r := c.Do("PUT", "/v1/me/follows/researcher/"+bad, reader, nil)
		if r.Status != 422 || !strings.Contains(string(r.Body), "dblp:46/5782") {
			t.Errorf("follow %s: %d %s", bad, r.Status, r.Body)
		}
	}
	r = c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["dblp:46/5782/1"]}]`)
	if r.Status != 422 || !strings.Contains(string(r.Body), "ids[0]") {
		t.Errorf("bad dblp id in a batch: %d %s", r.Status, r.Body)
	}
}

// The host push through the API: joining a new host id to a
// followed person and renaming them answers what it linked to whom and
// the old name (the response is checked against openapi.json), where it
// answered only "updated: 1, merges: []".
func TestRegistryPutReportsLinksAndRenames(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	if r := c.Do("PUT", "/v1/researchers", svc, `{"ids": ["host:1955166", "s2:1741101"], "name": "Mingzhi Wen"}`); r.Status != 200 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	r := c.Do("PUT", "/v1/researchers", svc, `{"ids": ["host:77", "s2:1741101"], "name": "Somebody Else"}`)
	var res struct {
		Updated int
		Merges  []any
		Links   []struct {
			Index int
			To    string
			IDs   []string
		}
		Renames []struct {
			Index        int
			ID, From, To string
		}
	}
	r.JSON(t, &res)
	if r.Status != 200 || res.Updated != 1 || len(res.Merges) != 0 ||
		len(res.Links) != 1 || res.Links[0].To != "s2:1741101" || len(res.Links[0].IDs) != 1 || res.Links[0].IDs[0] != "host:77" ||
		len(res.Renames) != 1 || res.Renames[0].From != "Mingzhi Wen" || res.Renames[0].To != "Somebody Else" || res.Renames[0].ID != "s2:1741101" {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
}
