package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/channels"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/inbox"
	"followfeed/mute"
	"followfeed/notify"
	"followfeed/ranking"
)

// A user's data (issue #27, "their data theirs"): everything followfeed
// keeps about them as one JSON document (GET /v1/me/export and the
// settings page's download), and its erasure (DELETE /v1/me, the settings
// page's erase form, and the host's DELETE /v1/users/{sub}). Erasure is
// account.Users.Erase: one transaction, each package erasing its own
// tables through the hooks app wires (docs/ARCHITECTURE.md, "A user's
// data").

// ExportFormat names the export document's shape; a change that breaks a
// program reading it gets a new name.
const ExportFormat = "followfeed-export/1"

// exportJSON is the export document. Each section is read through the
// package that owns it, in its API form, read state (package inbox) and
// mutes (package mute) included.
type exportJSON struct {
	Format     string       `json:"format"`
	ExportedAt time.Time    `json:"exported_at"`
	Profile    meJSON       `json:"profile"`
	Follows    []followJSON `json:"follows"`
	// Feedback is every "more", "less" and "saved", newest first.
	Feedback []feedbackJSON `json:"feedback"`
	// Disputes are the user's "not this person" corrections.
	Disputes []identity.Dispute `json:"disputes"`
	// Channels carry no credential: no signing secret, no access token,
	// and every URL masked (channels.MaskURL: scheme, host, the path's
	// last characters), since a webhook's URL may be one.
	Channels []channelJSON `json:"channels"`
	// Digests is the digest ledger, newest first.
	Digests []ledgerJSON `json:"digests"`
	// ReadState is every paper the user marked read or done (package
	// inbox), most recently changed first; other papers are unread.
	ReadState []paperStateJSON `json:"read_state"`
	// RememberOpened is the user's "remember what I opened".
	RememberOpened bool `json:"remember_opened"`
	// Mutes are the user's mutes, oldest first (GET /v1/me/mutes).
	Mutes []muteJSON `json:"mutes"`
}

// ledgerJSON is one digest of the ledger (notify.LedgerEntry).
type ledgerJSON struct {
	Kind      string     `json:"kind"`
	Period    string     `json:"period"`
	State     string     `json:"state"`
	Papers    int        `json:"papers"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	SentAt    *time.Time `json:"sent_at,omitempty"`
}

// exporter reads a user's export through the owners of its sections. The
// API and the settings page each make one from their own fields.
type exporter struct {
	prefs      *notify.Preferences
	follows    *follow.Service
	ranking    *ranking.Service
	identities *identity.Registry
	channels   *channels.Service
	digests    *notify.Digester
	inbox      *inbox.Service
	mutes      *mute.Service
}

func (a *API) exporter() exporter {
	return exporter{prefs: a.Prefs, follows: a.Follows, ranking: a.Ranking, identities: a.Identities, channels: a.Channels, digests: a.Digests, inbox: a.Inbox, mutes: a.Mutes}
}

func (s *Settings) exporter() exporter {
	return exporter{prefs: s.Prefs, follows: s.Follows, ranking: s.Ranking, identities: s.Identities, channels: s.Channels, digests: s.Digester, inbox: s.Inbox, mutes: s.Mutes}
}

// build reads u's export. The sections are read one after another, each
// in its owner's own statement: a change made meanwhile may show in one
// section and not yet in another.
func (x exporter) build(ctx context.Context, u *account.User) (*exportJSON, error) {
	p, err := x.prefs.Get(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := &exportJSON{Format: ExportFormat, ExportedAt: time.Now().UTC().Truncate(time.Second), Profile: toMeJSON(u, p),
		Follows: []followJSON{}, Feedback: []feedbackJSON{}, Channels: []channelJSON{}, Digests: []ledgerJSON{}, ReadState: []paperStateJSON{}, Mutes: []muteJSON{}}
	fs, err := x.follows.All(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(fs))
	for _, f := range fs {
		out.Follows = append(out.Follows, toFollowJSON(f))
		names[f.Key()] = f.DisplayName()
	}
	for cursor := ""; ; {
		page, err := x.ranking.List(ctx, u.ID, cursor, ranking.MaxPage)
		if err != nil {
			return nil, err
		}
		for _, f := range page.Items {
			out.Feedback = append(out.Feedback, toFeedbackJSON(f))
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if out.Disputes, err = x.identities.DisputesBy(ctx, u.ID); err != nil {
		return nil, err
	}
	cs, err := x.channels.List(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		j := toChannelJSON(c, names)
		j.Secret = "" // never set by List; never exported either
		if j.URL != "" {
			j.URL = channels.MaskURL(c.URL)
		}
		if j.Homeserver != "" {
			j.Homeserver = channels.MaskURL(c.URL)
		}
		out.Channels = append(out.Channels, j)
	}
	ledger, err := x.digests.Ledger(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range ledger {
		j := ledgerJSON{Kind: e.Kind, Period: e.Period, State: string(e.State), Papers: e.Papers,
			CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
		if !e.SentAt.IsZero() {
			t := e.SentAt.UTC()
			j.SentAt = &t
		}
		out.Digests = append(out.Digests, j)
	}
	states, err := x.inbox.All(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range states {
		out.ReadState = append(out.ReadState, toPaperStateJSON(e))
	}
	if out.RememberOpened, err = x.inbox.RememberOpened(ctx, u.ID); err != nil {
		return nil, err
	}
	ms, err := x.mutes.List(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	mnames, err := muteNames(ctx, x.follows, ms)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		out.Mutes = append(out.Mutes, toMuteJSON(m, mnames))
	}
	return out, nil
}

// exportFilename is the name the download is saved under.
const exportFilename = "followfeed-data.json"

// getExport is GET /v1/me/export: the user's data as one JSON document.
func (a *API) getExport(w http.ResponseWriter, r *http.Request, u *account.User) error {
	doc, err := a.exporter().build(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportFilename+`"`)
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// deleteMe is DELETE /v1/me: the user erases their account (204). The
// token that asked is still valid until it expires, and a later request
// with it starts a new, empty account: the host decides who may sign in.
func (a *API) deleteMe(w http.ResponseWriter, r *http.Request, u *account.User) error {
	if _, err := a.Users.Erase(r.Context(), u.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteUser is DELETE /v1/users/{sub}: the host erases a user it deleted
// (a service token with scope users:write). 204 whether or not followfeed
// knew the subject: erasing is idempotent.
func (a *API) deleteUser(w http.ResponseWriter, r *http.Request) {
	if !a.service(w, r, auth.ScopeUsersWrite, "erasing users") {
		return
	}
	sub := r.PathValue("sub")
	if err := checkSub(sub); err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	erased, err := a.Users.EraseSub(r.Context(), sub)
	if err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	a.Logger.InfoContext(r.Context(), "user erased by the host", "known", erased)
	w.WriteHeader(http.StatusNoContent)
}

// checkSub refuses a {sub} no token could carry (auth.Verifier's rules
// for the sub claim): a 422 naming "sub".
func checkSub(sub string) error {
	switch {
	case sub == "":
		return apperr.InvalidField("sub", "is empty; name the user by their token's sub claim")
	case len(sub) > auth.MaxSubjectLen:
		return apperr.InvalidField("sub", "is %d bytes long; a subject has at most %d", len(sub), auth.MaxSubjectLen)
	case !utf8.ValidString(sub) || strings.ContainsFunc(sub, unicode.IsControl):
		return apperr.InvalidField("sub", "contains a control character (or bytes that are not UTF-8); a subject is printable text")
	}
	return nil
}

// ---- the settings page's download and erase form ----

// exportDownload is GET /settings/export: the signed-in user's export as a
// download (a manage link from a mail does not reach it).
func (s *Settings) exportDownload(w http.ResponseWriter, r *http.Request) {
	u := s.sessionUser(w, r)
	if u == nil {
		return
	}
	doc, err := s.exporter().build(r.Context(), u)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+exportFilename+`"`)
	writeJSON(w, http.StatusOK, doc)
}

// sessionUser is the user of the request's settings session; without one
// (signed out, or a session ended) it has redirected to /login and
// returns nil.
func (s *Settings) sessionUser(w http.ResponseWriter, r *http.Request) *account.User {
	v, _ := s.who(r, "")
	if v == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return nil
	}
	u, err := s.Users.Get(r.Context(), v.userID)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return nil
	}
	return u
}

// eraseData is what the erase page says will go.
type eraseData struct {
	Follows, Channels int
	Email             string
}

// erasePage is GET /settings/erase: what erasing the account removes, and
// the button (a POST with the session's CSRF token) that does it.
func (s *Settings) erasePage(w http.ResponseWriter, r *http.Request) {
	v, _ := s.who(r, "")
	if v == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	p, err := s.Prefs.Get(ctx, v.userID)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	fs, err := s.Follows.All(ctx, v.userID)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	cs, err := s.Channels.List(ctx, v.userID)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	renderPage(w, r, s.Logger, http.StatusOK, "erase.html", page{Title: "Erase your account", SignedIn: true, CSRF: v.csrf,
		Nav: settingsNav(sectionPath("account")), Data: eraseData{Follows: len(fs), Channels: len(cs), Email: p.Email}})
}

// postErase is POST /settings/erase: the erase form. It erases the
// signed-in user (account.Users.Erase), ends the session's cookie and
// says so.
func (s *Settings) postErase(w http.ResponseWriter, r *http.Request) {
	v := s.formViewer(w, r, false)
	if v == nil {
		return
	}
	if _, err := s.Users.Erase(r.Context(), v.userID); err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteLaxMode})
	renderPage(w, r, s.Logger, http.StatusOK, "message.html", page{Title: "Account erased",
		Lines: []string{"Your followfeed account is erased: your follows, feeds, feedback, channels, email settings and the links in our mails are gone.",
			"If you sign in again from the site, you start with a new, empty account."}})
}
