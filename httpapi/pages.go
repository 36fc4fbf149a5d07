package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/inbox"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/ranking"
	"followfeed/web"
)

// page is what every HTML page template gets.
type page struct {
	Title      string
	CSSVersion string
	Scripts    []string
	SignedIn   bool
	CSRF       string
	Flash      string
	// RefusedForm is the action of the form Flash says was not saved
	// (renderRefused; "" for none), RefusedField the field it names.
	RefusedForm, RefusedField string
	// Page-specific data.
	Lines    []string
	Link     string
	LinkText string
	Email    string
	Action   string
	Data     any
	Meta     []meta
	// Links are <link> elements of the head (an actor page's alternates).
	Links []pageLink
	// Nav is the settings session's navigation (settingsNav), shown above
	// the content when set.
	Nav []navLink
}

type meta struct{ Name, Content string }

type pageLink struct{ Rel, Type, Href string }

// contentSecurityPolicy forbids inline scripts and styles and every origin
// but our own. frameAncestors is "'none'" except for the embed demo.
func contentSecurityPolicy(frameAncestors string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"form-action 'self'; base-uri 'none'; frame-ancestors " + frameAncestors
}

// renderPage writes a full HTML page with the security headers every page
// carries.
func renderPage(w http.ResponseWriter, r *http.Request, logger *slog.Logger, status int, name string, p page) {
	tpls, err := web.Templates()
	if err != nil {
		writeError(w, r, logger, err)
		return
	}
	t, ok := tpls[name]
	if !ok {
		writeError(w, r, logger, errors.New("no template "+name))
		return
	}
	if p.CSSVersion == "" {
		_, p.CSSVersion, _ = web.Asset("app.css")
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		writeError(w, r, logger, err)
		return
	}
	h := w.Header()
	if h.Get("Content-Security-Policy") == "" {
		h.Set("Content-Security-Policy", contentSecurityPolicy("'none'"))
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Frame-Options", "DENY")
	if strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'self'") || strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors http") {
		h.Del("X-Frame-Options") // the demo may be framed by the host's origins
	}
	if h.Get("Referrer-Policy") == "" {
		h.Set("Referrer-Policy", "same-origin")
	}
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// EmailPages serve the links in mail: one-click unsubscribe, address
// confirmation, "not this person" and the feedback links. A GET only shows a page with a button; link scanners that
// follow every GET change nothing.
type EmailPages struct {
	Logger    *slog.Logger
	Addresses *account.Addresses
	// Identities records "not this person" from a digest's link.
	Identities *identity.Registry
	// Ranking records a feedback link's value (feedback_pages.go);
	// Matcher loads the link's paper; Follows finds the researcher
	// follows a "less like this" page offers "not this person" for.
	Ranking *ranking.Service
	Matcher *match.Service
	Follows *follow.Service
	// Inbox records a paper opened through a mail's open link
	// (settings_opened.go).
	Inbox *inbox.Service
	// Mutes records a "less like this" page's "Not from this author"
	// (feedback_pages.go; nil: not offered).
	Mutes *mute.Service
	PerIP *Limiter
}

// disputePage shows a digest's "Not by …?" link as a page with a button.
func (p *EmailPages) disputePage(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	uid, arxivID, id, err := p.Addresses.CheckDispute(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	d := disputePage{ArxivID: arxivID, Name: p.followedName(r, uid, id), ID: id}
	if t, err := follow.ParseTarget(string(follow.Researcher), id); err == nil && p.Identities != nil {
		st, err := p.Identities.DisputeOf(r.Context(), uid, t, arxivID)
		if err != nil {
			writeError(w, r, p.Logger, err)
			return
		}
		d.Title = st.Title
		if !st.Reported.IsZero() {
			d.Reported = st.Reported.UTC().Format("2 January 2006")
		}
	}
	renderPage(w, r, p.Logger, http.StatusOK, "dispute.html", page{Title: "Not this person", Action: r.URL.Path, Data: d})
}

// disputePage is what a "Not by …?" link's page shows: the paper (its
// title when stored), the person followed (Name, and the id followed when
// it differs) and, once the user said so (Reported, a date), that, in
// place of the button.
type disputePage struct {
	ArxivID, Title, Name, ID string
	Reported                 string
}

// followedName is how the user's follow of the researcher id reads (their
// label, else the registry's name), id itself when the follow is gone or
// cannot be read: the page names the person, not only an id.
func (p *EmailPages) followedName(r *http.Request, userID int64, id string) string {
	t, err := follow.ParseTarget(string(follow.Researcher), id)
	if err != nil || p.Follows == nil {
		return id
	}
	fs, err := p.Follows.All(r.Context(), userID)
	if err != nil {
		return id
	}
	for _, f := range fs {
		if f.Target.Key() == t.Key() {
			if name := follow.ReasonLabels([]follow.Follow{f})[f.Key()]; name != "" {
				return name
			}
		}
	}
	return id
}

func (p *EmailPages) dispute(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	uid, arxivID, id, err := p.Addresses.CheckDispute(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	t, err := follow.ParseTarget(string(follow.Researcher), id)
	if err == nil {
		err = p.Identities.NotThisPerson(r.Context(), uid, t, arxivID)
	}
	if err != nil {
		writeError(w, r, p.Logger, err)
		return
	}
	renderPage(w, r, p.Logger, http.StatusOK, "message.html", page{Title: "Thanks",
		Lines: []string{"arXiv " + arxivID + " no longer shows for " + p.followedName(r, uid, id) + " in your feeds and digests.", "The site is told, so it can fix its data."},
		Link:  "/settings", LinkText: "Your settings"})
}

func (p *EmailPages) badLink(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, auth.ErrBadLink) {
		renderPage(w, r, p.Logger, statusFor(err), "message.html", page{Title: "This link is not valid",
			Lines: []string{"It may be incomplete (mail programs sometimes break long links) or it was replaced by a newer one.",
				"Open the link from your most recent followfeed mail, or change your settings after signing in on the site."}})
		return
	}
	writeError(w, r, p.Logger, err)
}

func (p *EmailPages) limited(w http.ResponseWriter, r *http.Request) bool {
	if ok, retry := p.PerIP.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests from this address; slow down")
		return true
	}
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL holds a token
	return false
}

func (p *EmailPages) unsubscribePage(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	email, err := p.Addresses.CheckUnsubscribe(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	renderPage(w, r, p.Logger, http.StatusOK, "unsubscribe.html", page{Title: "Unsubscribe", Email: email, Action: r.URL.Path})
}

// unsubscribe is the RFC 8058 one-click endpoint: no cookie, no session, no
// CSRF token (the signed URL is the authority), 200 and effective at once.
func (p *EmailPages) unsubscribe(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	email, err := p.Addresses.Unsubscribe(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	renderPage(w, r, p.Logger, http.StatusOK, "message.html", page{Title: "You are unsubscribed",
		Lines: []string{"No more digests will go to " + email + ".", "Your follows and private feeds are unchanged; you can turn digests on again in your settings."},
		Link:  "/settings", LinkText: "Your settings"})
}

func (p *EmailPages) confirmPage(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	email, err := p.Addresses.CheckConfirm(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	renderPage(w, r, p.Logger, http.StatusOK, "confirm.html", page{Title: "Confirm your address", Email: email, Action: r.URL.Path})
}

func (p *EmailPages) confirm(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	email, err := p.Addresses.Confirm(r.Context(), r.PathValue("token"))
	if err != nil {
		p.badLink(w, r, err)
		return
	}
	renderPage(w, r, p.Logger, http.StatusOK, "message.html", page{Title: "Address confirmed",
		Lines: []string{"Digests will go to " + email + "."}, Link: "/settings", LinkText: "Your settings"})
}

// serveStatic serves web's assets under /static/: with the right
// ?v=<hash> they are immutable for a year, otherwise cached for 5 minutes.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	body, version, err := web.Asset(r.PathValue("file"))
	if err != nil {
		writeError(w, r, slog.Default(), apperr.New(apperr.NotFound, "no such file under /static/"))
		return
	}
	serveAsset(w, r, r.PathValue("file"), body, version, r.URL.Query().Get("v") == version)
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string, body []byte, version string, immutable bool) {
	h := w.Header()
	switch {
	case strings.HasSuffix(name, ".css"):
		h.Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	}
	if immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	h.Set("ETag", `"`+version+`"`)
	h.Set("Access-Control-Allow-Origin", "*") // scripts and styles are public
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if notModified(r, `"`+version+`"`, time.Time{}) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(body)
}
