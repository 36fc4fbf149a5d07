package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/inbox"
	"followfeed/mute"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/web"
)

// sessionCookie holds a signed-in user's session on the settings pages.
const sessionCookie = "ff_session"

// sessionTTL is how long a settings session lasts.
const sessionTTL = 12 * time.Hour

// landingPage is the first page of a settings session: where a sign-in
// (GET or POST /login) lands and where GET /settings sends a signed-in
// user. It is the one place that says so.
const landingPage = "/inbox"

// settingsPages are the pages of the settings session's navigation, in its
// order: Path is the page's URL, Section the settings.html block it shows
// ("" for a page served elsewhere: the inbox), Title its heading.
var settingsPages = []struct{ Path, Section, Label, Title string }{
	{"/inbox", "", "Inbox", "Inbox"},
	{"/settings/follows", "follows", "Follows", "Follows"},
	{"/settings/feeds", "feeds", "Feeds", "Your feeds"},
	{"/settings/channels", "channels", "Channels", "Push channels"},
	{"/settings/email", "email", "Email", "Email digests"},
	{"/settings/account", "account", "Account", "Your account"},
}

// navLink is one link of the settings navigation (layout.html's nav).
type navLink struct {
	Href, Label string
	Current     bool
}

// settingsNav is the navigation with the page at path current marked
// (aria-current="page"); any page of the session (the inbox too) passes it
// as page.Nav.
func settingsNav(current string) []navLink {
	out := make([]navLink, len(settingsPages))
	for i, p := range settingsPages {
		out[i] = navLink{Href: p.Path, Label: p.Label, Current: p.Path == current}
	}
	return out
}

// sectionPath is the URL of the settings page that shows section.
func sectionPath(section string) string {
	for _, p := range settingsPages {
		if p.Section == section && section != "" {
			return p.Path
		}
	}
	return landingPage
}

// formSections is the page each settings form lives on, by its POST path:
// the page its post/redirect/get returns to and, on a rejected field,
// renders again.
var formSections = map[string]string{
	"/settings/follows":         "follows",
	"/settings/feed-token":      "feeds",
	"/settings/email":           "email",
	"/settings/not-this-person": "email", // the digest preview's "Not by …?"
	"/settings/feedback":        "account",
	"/settings/pause":           "email", // the pause, quiet days and snooze card
	"/settings/remember-opened": "account",
	"/settings/mutes":           "follows", // the mutes section; its Remove buttons below (post)
}

// Settings serves the user's settings pages: sign-in handoff from the
// host (a short-lived JWT becomes a session cookie), follows, feed URLs,
// email settings and a preview of the next digest. Every action is a plain
// HTML form (works without JavaScript), protected by a CSRF token; a
// "manage preferences" link from a mail opens the email part without a
// session.
type Settings struct {
	Logger    *slog.Logger
	Verifier  TokenVerifier
	Users     *account.Users
	Addresses *account.Addresses
	Follows   *follow.Service
	Feeds     *feeds.Service
	Prefs     *notify.Preferences
	Digester  *notify.Digester
	Channels  *channels.Service
	Signer    *auth.LinkSigner
	// Identities records "not this person" (the preview's buttons).
	Identities *identity.Registry
	// Previews previews queries (the search section; the API's, so a
	// user's previews from the page and the API run one at a time).
	Previews *Previews
	// Ranking lists and clears the user's feedback (the feedback section,
	// settings_feedback.go).
	Ranking *ranking.Service
	// Inbox keeps the user's read state of papers (the inbox page, the
	// export).
	Inbox *inbox.Service
	// Mutes lists, adds and removes the user's mutes (the mutes section,
	// settings_mutes.go).
	Mutes *mute.Service
	// PerUser limits search previews per user (the API's per-user
	// limiter, so the page and GET /v1/search/preview share one budget).
	PerUser *Limiter
	// Secure marks cookies Secure (PUBLIC_URL is https).
	Secure bool
	// DevLogin shows a paste-a-token form on /login (development).
	DevLogin bool
	// HostOrigins are the host site's origins (CORS_ORIGINS): a sign-in
	// link followed from one of their pages signs in at once, and they may
	// POST /login.
	HostOrigins []string
	PerIP       *Limiter
	csrfKey     []byte
}

// NewSettings returns the settings pages; secret is SECRET_KEY (for CSRF).
func NewSettings(s Settings, secret []byte) *Settings {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("followfeed csrf"))
	s.csrfKey = m.Sum(nil)
	return &s
}

// viewer is who is looking at the settings: a session user, or a manage
// link limited to the email settings.
type viewer struct {
	userID    int64
	sub       string
	emailOnly bool
	manage    string // the manage-link token, in email-only mode
	csrf      string
}

func (s *Settings) csrfFor(bound string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(bound))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// who resolves the request's session cookie or manage token.
func (s *Settings) who(r *http.Request, manageToken string) (*viewer, error) {
	if manageToken != "" {
		uid, err := s.Addresses.ManageUser(r.Context(), manageToken)
		if err != nil {
			return nil, err
		}
		return &viewer{userID: uid, emailOnly: true, manage: manageToken, csrf: s.csrfFor("manage:" + manageToken)}, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, nil
	}
	l, err := s.Signer.Verify(c.Value, auth.ActionSession)
	if err != nil || len(l.Data) != 8 || time.Now().Unix() > int64(binary.BigEndian.Uint64(l.Data)) {
		return nil, nil
	}
	u, err := s.Users.Get(r.Context(), l.UserID)
	if err != nil || u.SessionEpoch != l.Epoch {
		return nil, nil // signed out, or links revoked, since
	}
	return &viewer{userID: u.ID, sub: u.Sub, csrf: s.csrfFor("session:" + c.Value)}, nil
}

// setSession signs the user in: the cookie carries the user's current
// session epoch, so logging out (or revoking email links) ends it.
func (s *Settings) setSession(w http.ResponseWriter, u *account.User) {
	exp := time.Now().Add(sessionTTL)
	tok := s.Signer.Sign(auth.Link{Action: auth.ActionSession, UserID: u.ID, Epoch: u.SessionEpoch,
		Data: binary.BigEndian.AppendUint64(nil, uint64(exp.Unix()))})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: tok, Path: "/", Expires: exp, MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteLaxMode})
}

// login turns the host's short-lived JWT (?token= or a form field) into a
// session cookie, then redirects to landingPage so the token leaves the URL.
func (s *Settings) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	if ok, retry := s.PerIP.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests from this address; slow down")
		return
	}
	tok := r.URL.Query().Get("token")
	if r.Method == http.MethodPost {
		if !s.loginOriginOK(r) {
			// Login CSRF: another site's form would sign this browser into
			// whatever account its token names.
			renderPage(w, r, s.Logger, http.StatusForbidden, "message.html", page{Title: "Sign-in refused",
				Lines: []string{"This sign-in was sent from another site. Open your followfeed settings from the site you follow researchers on."}})
			return
		}
		if err := r.ParseForm(); err != nil {
			writeError(w, r, s.Logger, formError(err))
			return
		}
		tok = r.PostFormValue("token")
	}
	if tok == "" {
		renderPage(w, r, s.Logger, http.StatusOK, "login.html", page{Title: "Sign in", Data: s.DevLogin})
		return
	}
	claims, err := s.Verifier.Verify(r.Context(), strings.TrimSpace(tok))
	if err != nil {
		var ve *auth.VerifyError
		msg := "The sign-in link is not valid. Go back to the site and open your followfeed settings again."
		if errors.As(err, &ve) {
			msg = "The sign-in link is not valid (" + ve.Message + "). Go back to the site and open your followfeed settings again."
		}
		renderPage(w, r, s.Logger, http.StatusUnauthorized, "message.html", page{Title: "Sign-in failed", Lines: []string{msg}})
		return
	}
	if claims.IsService() {
		renderPage(w, r, s.Logger, http.StatusForbidden, "message.html", page{Title: "Sign-in failed",
			Lines: []string{"Service tokens cannot sign in as a user."}})
		return
	}
	if r.Method == http.MethodGet && !s.fromHost(r) {
		// A link from anywhere else (another site, a mail) could sign this
		// browser into someone else's account: ask first. The button
		// posts the token from our own origin.
		who := claims.Email
		if who == "" {
			who = claims.Subject
		}
		renderPage(w, r, s.Logger, http.StatusOK, "login_confirm.html", page{Title: "Sign in", Email: who, Data: tok,
			Scripts: []string{"/static/login.js?v=" + assetVersion("login.js")}}) // takes the token out of the URL
		return
	}
	u, err := s.Users.Ensure(r.Context(), claims)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	s.setSession(w, u)
	http.Redirect(w, r, landingPage, http.StatusSeeOther)
}

// trustedOrigin reports whether origin (scheme://host) is this server's own
// (the request's Host) or one of the host site's origins.
func (s *Settings) trustedOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == r.Host {
		return true
	}
	o := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, h := range s.HostOrigins {
		if strings.TrimSuffix(strings.ToLower(h), "/") == o {
			return true
		}
	}
	return false
}

// loginOriginOK is the login-CSRF check of POST /login: a browser names the
// sending page's origin in Origin, which must be ours or the host site's
// (an opaque "null" origin must come with Sec-Fetch-Site: same-origin), or
// without Origin, Sec-Fetch-Site must not say another site. Clients that send
// neither (curl, the host's backend) are no browser to forge a request in.
func (s *Settings) loginOriginOK(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	switch o := r.Header.Get("Origin"); o {
	case "":
	case "null":
		// Our pages send Referrer-Policy: no-referrer, so a browser posts
		// their forms with Origin: null; Sec-Fetch-Site then tells.
		return site == "same-origin"
	default:
		return s.trustedOrigin(r, o)
	}
	return site == "" || site == "same-origin" || site == "none"
}

// fromHost reports whether a GET /login came from one of our own pages or
// the host site's: Sec-Fetch-Site same-origin, or a Referer whose origin is
// ours or a host origin (browsers send at least the origin by default; a
// page that hides it gets the confirm button).
func (s *Settings) fromHost(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	ref := r.Referer()
	return ref != "" && s.trustedOrigin(r, ref)
}

func (s *Settings) logout(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, r, s.Logger, formError(err))
		return
	}
	v, _ := s.who(r, "")
	if v != nil {
		if why := s.csrfRefusal(r, v); why != "" {
			s.refused(w, r, why)
			return
		}
	}
	if v != nil && !v.emailOnly {
		// Every session of this user ends, not only this cookie.
		if err := s.Users.EndSessions(r.Context(), v.userID); err != nil {
			writeError(w, r, s.Logger, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteLaxMode})
	renderPage(w, r, s.Logger, http.StatusOK, "message.html", page{Title: "Signed out", Lines: []string{"You are signed out of followfeed."}})
}

// Why csrfRefusal refuses a form.
const (
	refusedOrigin = "origin"
	refusedNull   = "null"
	refusedToken  = "token"
)

// csrfRefusal says why a form post of v's is refused, "" when it is not:
// refusedOrigin for an Origin other than ours; refusedNull for a session's
// form with Origin: null that the browser does not say is same-origin
// (Sec-Fetch-Site), which is what a sandboxed frame, a data: or file: page
// or a cross-site redirect sends — our own pages that set Referrer-Policy:
// no-referrer (the one-time secret page) post with Origin: null and
// Sec-Fetch-Site: same-origin, the rule the sign-in form has
// (loginOriginOK); refusedToken for a missing or wrong CSRF token. A
// manage link's form (no cookie: the link in the body is the authority)
// may come with Origin: null, as its page sets no-referrer.
func (s *Settings) csrfRefusal(r *http.Request, v *viewer) string {
	// Same-origin check first (browsers send Origin on POST), then the token.
	switch o := r.Header.Get("Origin"); o {
	case "":
	case "null":
		if !v.emailOnly && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
			return refusedNull
		}
	default:
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			return refusedOrigin
		}
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(v.csrf)) {
		return refusedToken
	}
	return ""
}

// refused is the 403 page of a form csrfRefusal refused, saying why.
func (s *Settings) refused(w http.ResponseWriter, r *http.Request, why string) {
	title, line := "Form expired", "This form was not sent from your settings page, or it is too old. Reload the page and try again."
	switch why {
	case refusedNull:
		title, line = "Form refused", "This form was sent from a page without an origin (a sandboxed frame, a local file, or a redirect from another site), so nothing was saved. Open your settings page and send it from there."
	case refusedOrigin:
		title, line = "Form refused", "This form was sent from another site, so nothing was saved: followfeed takes changes only from its own pages. Open your settings page and make the change there."
	}
	renderPage(w, r, s.Logger, http.StatusForbidden, "message.html", page{Title: title,
		Lines: []string{line}, Link: "/settings", LinkText: "Settings"})
}

type feedURL struct{ Format, Label, URL string }

type frequencyOption struct {
	Value, Label string
	Selected     bool
}

type settingsData struct {
	// Section is the page shown: follows, feeds, channels, email or
	// account (settingsPages); settings.html shows that block only.
	Section       string
	EmailOnly     bool
	ManageToken   string
	Follows       []followJSON
	FeedURLs      []feedURL
	OPMLURL       string
	OPMLPerFollow string
	Profile       notify.Profile
	Weekday       string
	Timezones     []string
	TimezoneUnset bool
	Frequencies   []frequencyOption
	NextAt        string
	Preview       *previewData
	// DigestsOff: the preview is of papers waiting while digests are off,
	// which turning them on does not mail (they start from then).
	DigestsOff bool
	Channels   *channelsData // settings_channels.go
	Search     *searchData   // settings_search.go
	Feedback   *feedbackData // settings_feedback.go
	Mutes      *mutesData    // settings_mutes.go
	// Orders are the digest's order options (the budget controls).
	Orders []frequencyOption
	Pause  *pauseData // settings_pause.go
	// RememberOpened is the user's "remember what I opened"
	// (settings_opened.go, _remember_opened.html).
	RememberOpened bool
}

type previewData struct {
	Subject string
	Groups  []notify.DigestGroup
	// Omitted are the papers the digest would count rather than list
	// (over its budget), OmittedBy by follow, as the mail says them.
	Omitted   int
	OmittedBy string
	// Notice says the harvest is behind (notify.DigestContent.BehindNotice).
	Notice string
	// NoAnnouncement: arXiv announced nothing since the last digest.
	NoAnnouncement bool
}

var flashes = map[string]string{
	"unfollowed":   "Unfollowed.",
	"saved":        "Saved.",
	"disputed":     "Thanks: that paper no longer shows for that researcher in your feeds and digests, and the site is told so it can fix its data.",
	"rotated":      "Your feed token was replaced: the old feed links stop working now. Update your feed reader.",
	"email":        "Email settings saved.",
	"confirm":      "Email settings saved. We sent a confirmation mail to the new address.",
	"started":      "Digests are on. They hold papers matched from now on; everything that came before is in your feed (the Feeds page).",
	"followed":     "Followed.",
	"search":       "You follow the query now. Its matches of the last 30 days join your feeds within seconds; new papers it matches come as they arrive.",
	"feedback":     "Feedback removed: the paper counts no more in how your papers are ranked.",
	"feedback-set": "Feedback saved.",
	"muted":        "Muted: matching papers leave your feeds, digests, alerts and push channels.",
	"unmuted":      "Mute removed.",
}

// flash is the message of a ?done= code.
func flash(done string) string {
	if f, ok := flashes[done]; ok {
		return f
	}
	return channelFlashes[done]
}

// page is GET /settings, the URL mails and the host site link to: with a
// mail's manage link (?token=) the email page in place; signed in, a 303 to
// the page a query names (?q= the follows page's search, ?feedback= the
// account page's list) or else to landingPage, the query kept; signed out,
// to /login.
func (s *Settings) page(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("token") != "" {
		s.show("email")(w, r)
		return
	}
	v, err := s.who(r, "")
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	if v == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	target := landingPage
	switch {
	case q.Has("q"):
		target = sectionPath("follows")
	case q.Has("feedback"):
		target = sectionPath("account")
	}
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// show serves the settings page of section (GET /settings/follows, …): a
// session's, or for the email page a mail's manage link (?token=), which
// shows that page alone.
func (s *Settings) show(section string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		manage := ""
		if section == "email" {
			manage = r.URL.Query().Get("token")
		}
		if manage != "" {
			w.Header().Set("Referrer-Policy", "no-referrer")
		}
		v, err := s.who(r, manage)
		if err != nil {
			if errors.Is(err, auth.ErrBadLink) {
				renderPage(w, r, s.Logger, statusFor(err), "message.html", page{Title: "This link is not valid",
					Lines: []string{"Open the settings link from your most recent followfeed mail, or sign in on the site."}})
				return
			}
			writeError(w, r, s.Logger, err)
			return
		}
		if v == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		d, err := s.data(r, v, section)
		if err != nil {
			writeError(w, r, s.Logger, err)
			return
		}
		status := http.StatusOK
		if !v.emailOnly && section == "follows" {
			if d.Search, status, err = s.searchSection(r, w, v, r.URL.Query().Get("q"), d.Follows); err != nil {
				writeError(w, r, s.Logger, err)
				return
			}
		}
		if d.Feedback != nil && d.Feedback.Error != "" && status == http.StatusOK {
			status = http.StatusUnprocessableEntity
		}
		s.render(w, r, status, v, d, flash(r.URL.Query().Get("done")))
	}
}

// render writes settings page d (its Section) for v: the navigation with
// the page marked, unless v holds only a manage link.
func (s *Settings) render(w http.ResponseWriter, r *http.Request, status int, v *viewer, d *settingsData, flash string) {
	s.renderPage(w, r, status, v, d, flash, formRefusal{})
}

// renderPage is render with the form the flash refuses (none: the zero
// formRefusal; renderRefused).
func (s *Settings) renderPage(w http.ResponseWriter, r *http.Request, status int, v *viewer, d *settingsData, flash string, refused formRefusal) {
	p := page{Title: "Settings", SignedIn: !v.emailOnly, CSRF: v.csrf, Flash: flash, RefusedForm: refused.Form, RefusedField: refused.Field,
		Scripts: []string{"/static/settings.js?v=" + assetVersion("settings.js")}, Data: d}
	for _, sp := range settingsPages {
		if sp.Section == d.Section && sp.Section != "" {
			p.Title = sp.Title
			if !v.emailOnly {
				p.Nav = settingsNav(sp.Path)
			}
		}
	}
	renderPage(w, r, s.Logger, status, "settings.html", p)
}

// renderRefused is render for a form the page's flash refuses (post):
// the flash names the form (its action, the path posted to) and the
// field refused, so the page's script puts back what the reader typed
// into the form sent (settings.js), says the problem beside it and moves
// the focus to that field; without script the flash says it above the
// page.
func (s *Settings) renderRefused(w http.ResponseWriter, r *http.Request, status int, v *viewer, d *settingsData, flash, field string) {
	s.renderPage(w, r, status, v, d, flash, formRefusal{Form: r.URL.Path, Field: field})
}

// formRefusal is the form a settings page's flash refuses and its field (a
// problem's, e.g. "digest.max_papers"); the zero value: none.
type formRefusal struct{ Form, Field string }

// about is the alternate page of private feeds (feeds.Service.AboutURL):
// static, public, cacheable for a day, no redirect and no database, so a
// feed reader that fetches it on every refresh costs one cheap request.
func (s *Settings) about(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	renderPage(w, r, s.Logger, http.StatusOK, "message.html", page{Title: "Your followfeed feed",
		Lines: []string{"This is a private feed of new arXiv papers matching the researchers, categories and institutions you follow.",
			"Its address is personal: anyone with it can read the feed. Manage your follows, rotate the address or change email digests in your settings."},
		Link: "/settings", LinkText: "Your settings"})
}

func assetVersion(name string) string {
	_, v, _ := web.Asset(name)
	return v
}

// data reads what the settings page of section shows to v (a manage link's
// viewer: the email page only); every page gets the profile and follows,
// the sections' own reads (the preview, feed URLs, channels, feedback)
// run on their page alone.
func (s *Settings) data(r *http.Request, v *viewer, section string) (*settingsData, error) {
	ctx := r.Context()
	p, err := s.Prefs.Get(ctx, v.userID)
	if err != nil {
		return nil, err
	}
	if v.emailOnly {
		section = "email"
	}
	d := &settingsData{Section: section, EmailOnly: v.emailOnly, ManageToken: v.manage, Profile: p, Timezones: web.Timezones(),
		Weekday: strings.ToLower(p.Digest.Weekday.String()), TimezoneUnset: p.Timezone == "UTC"}
	for _, f := range []struct{ v, l string }{{"off", "Off"}, {"instant", "Instantly (batched over 10 minutes)"}, {"daily", "Daily"}, {"weekly", "Weekly"}} {
		d.Frequencies = append(d.Frequencies, frequencyOption{Value: f.v, Label: f.l, Selected: string(p.Digest.Frequency) == f.v})
	}
	for _, o := range []struct {
		v notify.Order
		l string
	}{{notify.OrderNewest, "Newest first, by follow"}, {notify.OrderBest, "Best first for you"}} {
		d.Orders = append(d.Orders, frequencyOption{Value: string(o.v), Label: o.l, Selected: p.Digest.Order == o.v})
	}
	if !p.NextDigestAt.IsZero() {
		loc, err := time.LoadLocation(p.Timezone)
		if err != nil {
			loc = time.UTC
		}
		d.NextAt = p.NextDigestAt.In(loc).Format("Monday 2 January 15:04 MST")
		// A pause holding that digest: the next mail is the catch-up.
		switch held, catchUp := p.HoldsNextDigest(); {
		case held && catchUp == nil:
			d.NextAt = "none while you are away; one catch-up digest when you end the pause"
		case held:
			d.NextAt = "a catch-up digest " + catchUp.In(loc).Format("Monday 2 January 15:04 MST") + ", when the pause ends"
		}
	}
	d.DigestsOff = p.Digest.Frequency == notify.Off
	if section == "email" {
		if c, err := s.Digester.Preview(ctx, v.userID); err == nil {
			d.Preview = &previewData{Subject: notify.DigestSubject(c), Groups: c.Groups, Notice: c.BehindNotice(),
				NoAnnouncement: c.NoAnnouncement && c.Total == 0 && c.HarvestBehind == "",
				Omitted:        c.Omitted, OmittedBy: notify.OmittedByLine(c.OmittedBy)}
		}
	}
	if v.emailOnly {
		return d, nil
	}
	d.Search = &searchData{Days: catalog.BackfillDays}
	fs, err := s.Follows.All(ctx, v.userID)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		j := toFollowJSON(f)
		j.Name = f.OwnerName()
		d.Follows = append(d.Follows, j)
	}
	switch section {
	case "feeds":
		tok, err := s.Feeds.Tokens().Token(ctx, v.userID)
		if err != nil {
			return nil, err
		}
		d.FeedURLs = []feedURL{{"atom", "Atom", s.Feeds.PrivateURL(tok, feeds.Atom, nil)},
			{"rss", "RSS", s.Feeds.PrivateURL(tok, feeds.RSS, nil)}, {"json", "JSON Feed", s.Feeds.PrivateURL(tok, feeds.JSON, nil)}}
		d.OPMLURL = s.Feeds.OPMLURL(tok, false)
		d.OPMLPerFollow = s.Feeds.OPMLURL(tok, true)
	case "channels":
		loc, err := time.LoadLocation(p.Timezone)
		if err != nil {
			loc = time.UTC
		}
		if d.Channels, err = s.channelsData(ctx, v, d.Follows, loc); err != nil {
			return nil, err
		}
	case "account":
		// The list's page: the link's ?feedback=, or for a refused Undo
		// the page its form was on (shown again as it was).
		cursor := r.URL.Query().Get("feedback")
		if r.Method == http.MethodPost && r.URL.Path == "/settings/feedback" {
			if cursor = r.PostFormValue("page"); len(cursor) > maxFeedbackCursor {
				cursor = ""
			}
		}
		if d.Feedback, err = s.feedbackSection(r, v, cursor); err != nil {
			return nil, err
		}
		if d.RememberOpened, err = s.Inbox.RememberOpened(ctx, v.userID); err != nil {
			return nil, err
		}
	}
	if section == "email" {
		loc, err := time.LoadLocation(p.Timezone)
		if err != nil {
			loc = time.UTC
		}
		d.Pause = s.pauseData(v, p, d.Follows, loc)
	}
	if section == "follows" {
		if d.Mutes, err = s.mutesSection(ctx, v, d.Follows); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// formViewer reads a settings form (at most maxFormBody, its route's cap)
// and returns its signed-in viewer (or, with allowManage, the holder of
// the manage link in its token field) once the CSRF check passed;
// otherwise it has answered (400, 413, a redirect to /login, 403) and
// returns nil.
func (s *Settings) formViewer(w http.ResponseWriter, r *http.Request, allowManage bool) *viewer {
	if err := r.ParseForm(); err != nil {
		// A body cut off at the cap as it was read (chunked): as limitForm.
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) && s.formTooLarge(w, r) {
			return nil
		}
		writeError(w, r, s.Logger, formError(err))
		return nil
	}
	manage := ""
	if allowManage {
		manage = r.PostFormValue("token")
	}
	v, err := s.who(r, manage)
	if err != nil && !errors.Is(err, auth.ErrBadLink) {
		writeError(w, r, s.Logger, err)
		return nil
	}
	if v == nil {
		// Signed out, or a manage link that no longer holds (its page,
		// GET /settings?token=, says the link is not valid): sign in.
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return nil
	}
	if why := s.csrfRefusal(r, v); why != "" {
		s.refused(w, r, why)
		return nil
	}
	return v
}

// formSection is the settings page the form posted to path lives on:
// formSections, a mute's Remove (POST /settings/mutes/{id}) and the
// channel forms; "" for the others (the inbox's, the erase form).
func formSection(path string) string {
	if section, ok := formSections[path]; ok {
		return section
	}
	switch {
	case strings.HasPrefix(path, "/settings/mutes/"):
		return "follows"
	case strings.HasPrefix(path, "/settings/channels"):
		return "channels"
	}
	return ""
}

// limitForm is limitBody(maxFormBody) for a signed-in user's form: one
// whose Content-Length says more than maxFormBody gets the form's page
// again with the message and a 413 (formTooLarge), as a refused field
// gets it with a 422, before any byte is read; without a session (or for
// a manage link's form, whose token is in the unread body) it is the 413
// problem.
func (s *Settings) limitForm(h http.Handler) http.Handler {
	limited := limitBody(maxFormBody, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxFormBody && s.formTooLarge(w, r) {
			return
		}
		limited.ServeHTTP(w, r)
	})
}

// formTooLarge answers a form over maxFormBody from a session's user:
// the settings page it lives on (formSection) with the message, or for a
// form of no settings page a message page, with a 413. It returns false,
// having answered nothing, when the request carries no session.
func (s *Settings) formTooLarge(w http.ResponseWriter, r *http.Request) bool {
	v, err := s.who(r, "")
	if err != nil || v == nil {
		return false
	}
	msg := "Not saved — the form is larger than " + byteSize(maxFormBody) + "; shorten what you typed and send it again."
	section := formSection(r.URL.Path)
	if section == "" {
		link, text := "/settings", "Back to your settings"
		if strings.HasPrefix(r.URL.Path, "/inbox") {
			link, text = "/inbox", "Back to your inbox"
		}
		renderPage(w, r, s.Logger, http.StatusRequestEntityTooLarge, "message.html", page{Title: "Not saved", SignedIn: true,
			Lines: []string{msg}, Link: link, LinkText: text})
		return true
	}
	d, err := s.data(r, v, section)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return true
	}
	s.render(w, r, http.StatusRequestEntityTooLarge, v, d, msg)
	return true
}

// formError is a form that could not be read: 400, or 413 when its
// route's cap cut it off (the cause is kept for problemFor).
func formError(err error) error {
	return &apperr.Error{Code: apperr.BadRequest, Message: "the form could not be read", Err: err}
}

// post runs a form action for a signed-in viewer (or, for the email form, a
// manage link) after the CSRF check, then redirects (post/redirect/get) to
// the page the form lives on (formSections) with the outcome's flash
// (?done=, what act returns: a flash's name, which may go on with further
// escaped query parameters, "&name=value"); a rejected field renders that
// page again with the message.
func (s *Settings) post(w http.ResponseWriter, r *http.Request, allowManage bool, act func(v *viewer) (string, error)) {
	v := s.formViewer(w, r, allowManage)
	if v == nil {
		return
	}
	section := formSection(r.URL.Path)
	done, err := act(v)
	if err != nil {
		if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.NotFound) {
			// Show the form's page again with the problem, and its status
			// (a field refused; a thing already gone, as a mute removed
			// twice from two tabs).
			d, derr := s.data(r, v, section)
			if derr != nil {
				writeError(w, r, s.Logger, derr)
				return
			}
			msg := pageProblem(e.Field, e.Message)
			s.renderRefused(w, r, statusFor(err), v, d, "Not saved — "+msg, e.Field)
			return
		}
		writeError(w, r, s.Logger, err)
		return
	}
	// Back to the page the form lives on; a manage link's viewer has only
	// the email page, which GET /settings?token= (its mail's link) is.
	target := sectionPath(section) + "?done=" + done
	if v.emailOnly {
		target = "/settings?done=" + done + "&token=" + url.QueryEscape(v.manage)
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/settings/mutes"):
		target += "#mutes"
	case r.URL.Path == "/settings/feedback":
		target += "#feedback"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (s *Settings) postFollow(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		t, err := follow.ParseTarget(r.PostFormValue("kind"), r.PostFormValue("id"))
		if err != nil {
			return "", err
		}
		switch r.PostFormValue("action") {
		case "follow":
			// The queries section's "Follow this query" (any kind works).
			_, _, err := s.Follows.Follow(r.Context(), v.userID, t, follow.Options{})
			if t.Kind == follow.Query {
				return "search", err
			}
			return "followed", err
		case "unfollow":
			_, err := s.Follows.Unfollow(r.Context(), v.userID, t)
			return "unfollowed", err
		case "options":
			cross := r.PostFormValue("include_cross_lists") != ""
			repl := r.PostFormValue("include_replacements") != ""
			opts := follow.Options{IncludeReplacements: &repl}
			if t.Kind == follow.Category {
				opts.IncludeCrossLists = &cross
			}
			// Unfollowed meanwhile (another tab): Get's not-found says so.
			if _, err := s.Follows.Get(r.Context(), v.userID, t); err != nil {
				return "", err
			}
			_, _, err := s.Follows.Follow(r.Context(), v.userID, t, opts)
			return "saved", err
		}
		return "", apperr.InvalidField("action", "must be follow, unfollow or options")
	})
}

// postNotThisPerson: the preview's "Not by …?" button beside a researcher
// match.
func (s *Settings) postNotThisPerson(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		arxivID, _, err := paper.ParseArxivID(r.PostFormValue("arxiv_id"))
		if err != nil {
			return "", apperr.InvalidField("arxiv_id", "not an arXiv id; reload the page")
		}
		t, err := follow.ParseTarget(string(follow.Researcher), r.PostFormValue("id"))
		if err != nil {
			return "", err
		}
		return "disputed", s.Identities.NotThisPerson(r.Context(), v.userID, t, arxivID)
	})
}

func (s *Settings) postRotate(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		_, err := s.Feeds.Tokens().Rotate(r.Context(), v.userID)
		return "rotated", err
	})
}

func (s *Settings) postEmail(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, true, func(v *viewer) (string, error) {
		f := func(name string) *string {
			if _, ok := r.PostForm[name]; !ok {
				return nil
			}
			val := r.PostFormValue(name)
			return &val
		}
		patch := notify.ProfilePatch{Email: f("email"), Timezone: f("timezone"), Digest: &notify.DigestPatch{
			Frequency: f("frequency"), Weekday: f("weekday")}}
		if h := f("hour"); h != nil {
			n, err := strconv.Atoi(*h)
			if err != nil {
				return "", apperr.InvalidField("digest.hour", "must be a local hour from 0 to 23")
			}
			patch.Digest.Hour = &n
		}
		empty := r.PostFormValue("send_empty") != ""
		patch.Digest.SendEmpty = &empty
		skip := r.PostFormValue("skip_no_announcement") != ""
		patch.Digest.SkipNoAnnouncement = &skip
		if err := budgetPatch(r, patch.Digest); err != nil {
			return "", err
		}
		before, err := s.Prefs.Get(r.Context(), v.userID)
		if err != nil {
			return "", err
		}
		// Saving a paused (suppressed) address again asks for confirmation.
		if patch.Email != nil && before.Suppressed != "" && strings.EqualFold(strings.TrimSpace(*patch.Email), before.Email) {
			if err := s.Addresses.Reconfirm(r.Context(), v.userID); err != nil {
				return "", err
			}
			patch.Email = nil
		}
		after, err := s.Prefs.Update(r.Context(), v.userID, patch)
		if err != nil {
			return "", err
		}
		if after.Email != "" && !after.EmailConfirmed && (!strings.EqualFold(after.Email, before.Email) || before.Suppressed != "") {
			return "confirm", nil
		}
		if before.Digest.Frequency == notify.Off && after.Digest.Frequency != notify.Off {
			// Digests start from now (notify.Preferences.Update): say so,
			// and where the papers that were waiting are.
			return "started", nil
		}
		return "email", nil
	})
}
