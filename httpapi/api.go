package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
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
	"followfeed/harvest"
	"followfeed/identity"
	"followfeed/inbox"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/notify"
	"followfeed/ranking"
)

// TokenVerifier checks a bearer token (auth.Verifier implements it).
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (*auth.Claims, error)
}

// API serves the JSON API under /v1.
type API struct {
	Logger    *slog.Logger
	Verifier  TokenVerifier
	Users     *account.Users
	Addresses *account.Addresses
	Follows   *follow.Service
	Papers    *catalog.Store
	// Previews runs search previews (shared with Settings).
	Previews *Previews
	// Identities is the researcher and institution registry.
	Identities *identity.Registry
	// Health, when set, records every push's outcome (source push).
	Health *harvest.Health
	Prefs  *notify.Preferences
	// Digests reads the user's digest ledger (their export).
	Digests  *notify.Digester
	Feeds    *feeds.Service
	Channels *channels.Service
	// Ranking keeps users' feedback on papers.
	Ranking *ranking.Service
	// Inbox keeps the user's read state of papers (papers.go).
	Inbox *inbox.Service
	// Mutes keeps what users mute (mutes.go).
	Mutes *mute.Service
	// Matcher explains why a paper reaches a user or not (mutes.go).
	Matcher *match.Service
	// PerIP and PerUser rate-limit requests (nil: unlimited).
	PerIP   *Limiter
	PerUser *Limiter
}

// ---- authentication ----

// bearer verifies the Authorization header. It returns (nil, nil) when the
// request carries no credentials at all.
func (a *API) bearer(r *http.Request) (*auth.Claims, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, &auth.VerifyError{Reason: auth.ReasonMalformed, Message: `the Authorization header must be "Bearer <token>"`}
	}
	return a.Verifier.Verify(r.Context(), strings.TrimSpace(token))
}

// writeAuthError answers 401 with the RFC 6750 challenge.
func (a *API) writeAuthError(w http.ResponseWriter, r *http.Request, err error) {
	var ve *auth.VerifyError
	if errors.As(err, &ve) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="followfeed", error="invalid_token", error_description=%q`, ve.Message))
		writeProblem(w, Problem{Type: ProblemType(apperr.Unauthorized), Title: titles[apperr.Unauthorized], Status: http.StatusUnauthorized,
			Detail: ve.Message, Instance: r.URL.Path})
		return
	}
	writeError(w, r, a.Logger, err)
}

type userHandler func(w http.ResponseWriter, r *http.Request, u *account.User) error

// userRoute requires a signed-in user (not a service token), applies the
// per-IP and per-user limits, and maps the handler's error to a problem.
func (a *API) userRoute(h userHandler) http.Handler {
	return a.ipLimited(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := a.bearer(r)
		if err != nil {
			a.writeAuthError(w, r, err)
			return
		}
		if claims == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="followfeed"`)
			writeProblem(w, Problem{Type: ProblemType(apperr.Unauthorized), Title: titles[apperr.Unauthorized], Status: http.StatusUnauthorized,
				Detail: "sign in: send the host's token as \"Authorization: Bearer <token>\"", Instance: r.URL.Path})
			return
		}
		if claims.IsService() {
			writeError(w, r, a.Logger, apperr.New(apperr.Forbidden, "service tokens (scope %s or %s) cannot act as a user", auth.ScopePapersWrite, auth.ScopeUsersWrite))
			return
		}
		if ok, retry := a.PerUser.Allow("u:" + claims.Subject); !ok {
			rateLimited(w, r, retry, "too many requests for this account; slow down")
			return
		}
		u, err := a.Users.Ensure(r.Context(), claims)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		if err := h(w, r, u); err != nil {
			writeError(w, r, a.Logger, err)
		}
	}))
}

func (a *API) ipLimited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, retry := a.PerIP.Allow(clientIP(r)); !ok {
			rateLimited(w, r, retry, "too many requests from this address; slow down")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ---- /v1/me ----

type digestJSON struct {
	Frequency string `json:"frequency"`
	Hour      int    `json:"hour"`
	Weekday   string `json:"weekday"`
	SendEmpty bool   `json:"send_empty"`
	// SkipNoAnnouncement skips empty digests whose window holds no arXiv
	// announcement.
	SkipNoAnnouncement bool `json:"skip_no_announcement"`
	// NextAt is when the next daily or weekly digest is due: during a
	// pause that holds it, the catch-up's time (the pause's end), absent
	// while the pause has no end.
	NextAt *time.Time `json:"next_at,omitempty"`
	// Order, MaxPapers and KeepFollowed are the budget (notify.DigestSettings).
	Order        string `json:"order"`
	MaxPapers    int    `json:"max_papers"`
	KeepFollowed bool   `json:"keep_followed"`
	// Weekdays are the days a daily digest goes out ("mon" … "sun");
	// the others fold into the next one sent.
	Weekdays []string `json:"weekdays"`
}

type meJSON struct {
	Sub            string     `json:"sub"`
	Email          string     `json:"email"`
	EmailConfirmed bool       `json:"email_confirmed"`
	Suppressed     string     `json:"suppressed,omitempty"`
	Timezone       string     `json:"timezone"`
	Digest         digestJSON `json:"digest"`
	// Pause is the user's vacation, null when none is set.
	Pause     *pauseJSON `json:"pause"`
	CreatedAt time.Time  `json:"created_at"`
}

func toMeJSON(u *account.User, p notify.Profile) meJSON {
	d := digestJSON{Frequency: string(p.Digest.Frequency), Hour: p.Digest.Hour,
		Weekday: strings.ToLower(p.Digest.Weekday.String()), SendEmpty: p.Digest.SendEmpty,
		SkipNoAnnouncement: p.Digest.SkipNoAnnouncement,
		Order:              string(p.Digest.Order), MaxPapers: p.Digest.MaxPapers, KeepFollowed: p.Digest.KeepFollowed,
		Weekdays: p.Digest.Weekdays.Names()}
	// A pause holding the next digest: what is due is its catch-up, at
	// the pause's end, and nothing while it has none (as the settings
	// page says).
	switch held, catchUp := p.HoldsNextDigest(); {
	case held && catchUp != nil:
		t := catchUp.UTC()
		d.NextAt = &t
	case !held && !p.NextDigestAt.IsZero():
		t := p.NextDigestAt.UTC()
		d.NextAt = &t
	}
	return meJSON{Sub: u.Sub, Email: p.Email, EmailConfirmed: p.EmailConfirmed, Suppressed: p.Suppressed,
		Timezone: p.Timezone, Digest: d, Pause: toPauseJSON(p.Pause), CreatedAt: u.CreatedAt.UTC()}
}

func (a *API) getMe(w http.ResponseWriter, r *http.Request, u *account.User) error {
	p, err := a.Prefs.Get(r.Context(), u.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMeJSON(u, p))
	return nil
}

// revokeEmailLinks makes the links in the user's earlier emails stop
// working (a leaked "manage preferences" link, say): 204.
func (a *API) revokeEmailLinks(w http.ResponseWriter, r *http.Request, u *account.User) error {
	if err := a.Addresses.RevokeLinks(r.Context(), u.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// digestPatch is PATCH /v1/me's digest: fields left out stay, and null
// is refused but where it means something (weekdays).
type digestPatch struct {
	Frequency *string `json:"frequency" want:"\"off\", \"instant\", \"daily\" or \"weekly\""`
	Hour      *int    `json:"hour"`
	Weekday   *string `json:"weekday" want:"a day of the week, like \"mon\""`
	SendEmpty *bool   `json:"send_empty"`
	// SkipNoAnnouncement: see digestJSON.
	SkipNoAnnouncement *bool   `json:"skip_no_announcement"`
	Order              *string `json:"order" want:"\"newest\" or \"best\""`
	MaxPapers          *int    `json:"max_papers"`
	KeepFollowed       *bool   `json:"keep_followed"`
	// Weekdays: absent leaves them, null resets them to every day.
	Weekdays nullable[[]string] `json:"weekdays" want:"a list of weekday names, like [\"mon\", \"tue\"], or null for every day"`
}

func (*digestPatch) partial() {}

// nullable is a field that tells null (Set, Null) from absent (not Set),
// for a field whose null means something (checkJSON lets it by).
type nullable[T any] struct {
	Set, Null bool
	Value     T
}

// UnmarshalJSON records that the field was sent, and whether as null.
func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set, n.Null = true, string(b) == "null"
	if n.Null {
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// jsonShape: checkJSON checks the value as a T.
func (*nullable[T]) jsonShape() reflect.Type { return reflect.TypeFor[T]() }

type mePatch struct {
	Email    *string      `json:"email" want:"an address, or \"\" to remove it"`
	Timezone *string      `json:"timezone"`
	Digest   *digestPatch `json:"digest"`
	// Pause: absent leaves it, null ends it, an object sets it
	// (decodePause).
	Pause json.RawMessage `json:"pause"`
}

func (*mePatch) partial() {}

func (a *API) patchMe(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body mePatch
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	patch := notify.ProfilePatch{Email: body.Email, Timezone: body.Timezone}
	if d := body.Digest; d != nil {
		patch.Digest = &notify.DigestPatch{Frequency: d.Frequency, Hour: d.Hour, Weekday: d.Weekday, SendEmpty: d.SendEmpty,
			SkipNoAnnouncement: d.SkipNoAnnouncement, Order: d.Order, MaxPapers: d.MaxPapers, KeepFollowed: d.KeepFollowed}
		switch {
		case d.Weekdays.Null: // every day: the quiet days are reset
			all := notify.AllWeekdays.Names()
			patch.Digest.Weekdays = &all
		case d.Weekdays.Set:
			patch.Digest.Weekdays = &d.Weekdays.Value
		}
	}
	var err error
	if patch.Pause, err = decodePause(body.Pause); err != nil {
		return err
	}
	p, err := a.Prefs.Update(r.Context(), u.ID, patch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMeJSON(u, p))
	return nil
}

// pauseJSON is a user's vacation (notify.Pause): dates in their time
// zone, and the instants they stand for.
type pauseJSON struct {
	From string `json:"from"`
	// Until is the day the user is back; null: until they end it.
	Until    *string    `json:"until"`
	StartsAt time.Time  `json:"starts_at"`
	EndsAt   *time.Time `json:"ends_at"`
}

func toPauseJSON(p *notify.Pause) *pauseJSON {
	if p == nil || p.StartsAt == nil || p.Over(time.Now()) {
		return nil // an ended pause is no pause to the user (its catch-up follows)
	}
	out := &pauseJSON{From: p.From.Format(notify.DateLayout), StartsAt: p.StartsAt.UTC()}
	if p.Until != nil {
		s := p.Until.Format(notify.DateLayout)
		out.Until = &s
	}
	if p.EndsAt != nil {
		t := p.EndsAt.UTC()
		out.EndsAt = &t
	}
	return out
}

// decodePause reads PATCH /v1/me's pause: absent (nil), null (end it) or
// {"from": date, "until": date | null}.
func decodePause(raw json.RawMessage) (*notify.PausePatch, error) {
	s := strings.TrimSpace(string(raw))
	switch s {
	case "":
		return nil, nil
	case "null":
		return &notify.PausePatch{Clear: true}, nil
	}
	var body struct {
		From  *string `json:"from" want:"a date like 2026-12-24"`
		Until *string `json:"until" want:"a date like 2026-12-24, or null" null:"until it is ended"`
	}
	notObject := apperr.InvalidField("pause", "must be {\"from\": \"YYYY-MM-DD\", \"until\": \"YYYY-MM-DD\" or null}, or null to end a pause")
	if !strings.HasPrefix(s, "{") {
		return nil, notObject
	}
	if err := checkJSON([]byte(s), reflect.TypeOf(body), "pause"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, notObject
	}
	if body.From == nil {
		return nil, apperr.InvalidField("pause.from", "is required: the first day of the pause, like 2026-12-24")
	}
	return &notify.PausePatch{From: *body.From, Until: body.Until}, nil
}

// ---- follows ----

type followJSON struct {
	Kind                string    `json:"kind"`
	ID                  string    `json:"id"`
	Name                string    `json:"name"`
	Label               string    `json:"label,omitempty"`
	IncludeCrossLists   bool      `json:"include_cross_lists"`
	IncludeReplacements bool      `json:"include_replacements"`
	CreatedAt           time.Time `json:"created_at"`
	// SnoozedUntil is the user's date until which the follow delivers
	// nothing by digest, alert or push (feeds keep it); null when it is
	// not snoozed (or the date has come).
	SnoozedUntil *string `json:"snoozed_until"`
}

func toFollowJSON(f follow.Follow) followJSON {
	out := followJSON{Kind: string(f.Kind), ID: f.ID, Name: f.DisplayName(), Label: f.Label,
		IncludeCrossLists: f.IncludeCrossLists, IncludeReplacements: f.IncludeReplacements, CreatedAt: f.CreatedAt.UTC()}
	if f.SnoozedUntil != nil && f.Snoozed(time.Now()) {
		s := f.SnoozedUntil.Format(follow.SnoozeDateLayout)
		out.SnoozedUntil = &s
	}
	return out
}

func (a *API) listFollows(w http.ResponseWriter, r *http.Request, u *account.User) error {
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return apperr.InvalidField("limit", "must be a whole number from 1 to 500")
		}
		limit = n
	}
	page, err := a.Follows.List(r.Context(), u.ID, q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := struct {
		Follows []followJSON `json:"follows"`
		Next    string       `json:"next,omitempty"`
	}{Follows: make([]followJSON, 0, len(page.Follows)), Next: page.Next}
	for _, f := range page.Follows {
		out.Follows = append(out.Follows, toFollowJSON(f))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type followOptions struct {
	IncludeCrossLists   *bool   `json:"include_cross_lists"`
	IncludeReplacements *bool   `json:"include_replacements"`
	Label               *string `json:"label" want:"a string, or \"\" to remove the label"`
	// SnoozedUntil: absent leaves the snooze, null un-snoozes, a date
	// snoozes an existing follow (follow.Service.Snooze).
	SnoozedUntil json.RawMessage `json:"snoozed_until"`
}

func (*followOptions) partial() {}

func (a *API) putFollow(w http.ResponseWriter, r *http.Request, u *account.User) error {
	t, err := follow.ParseTarget(r.PathValue("kind"), r.PathValue("id"))
	if err != nil {
		return err
	}
	var opts followOptions
	if err := decodeJSON(r, &opts, true); err != nil {
		return err
	}
	if len(opts.SnoozedUntil) > 0 {
		// A snooze is of a follow the user has (422 naming "follow"
		// otherwise): it is set first, then any other option.
		var until *string
		if string(opts.SnoozedUntil) != "null" {
			var s string
			if err := json.Unmarshal(opts.SnoozedUntil, &s); err != nil {
				return apperr.InvalidField("snoozed_until", "must be a date like 2026-12-24 (YYYY-MM-DD, in your time zone), or null to un-snooze")
			}
			until = &s
		}
		f, err := a.Follows.Snooze(r.Context(), u.ID, t, until, time.Now())
		if err != nil {
			return err
		}
		if opts.IncludeCrossLists == nil && opts.IncludeReplacements == nil && opts.Label == nil {
			writeJSON(w, http.StatusOK, toFollowJSON(f))
			return nil
		}
	}
	f, created, err := a.Follows.Follow(r.Context(), u.ID, t, follow.Options{
		IncludeCrossLists: opts.IncludeCrossLists, IncludeReplacements: opts.IncludeReplacements, Label: opts.Label})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/me/follows/"+string(t.Kind)+"/"+t.ID)
	}
	writeJSON(w, status, toFollowJSON(f))
	return nil
}

func (a *API) deleteFollow(w http.ResponseWriter, r *http.Request, u *account.User) error {
	t, err := follow.ParseTarget(r.PathValue("kind"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := a.Follows.Unfollow(r.Context(), u.ID, t); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// followStatus serves Follow buttons: public, cheap, and personal only when
// a valid user token comes along. A bad token is still a 401, so a broken
// integration is noticed.
func (a *API) followStatus(w http.ResponseWriter, r *http.Request) {
	t, err := follow.ParseTarget(r.PathValue("kind"), r.PathValue("id"))
	if err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	claims, err := a.bearer(r)
	if err != nil {
		a.writeAuthError(w, r, err)
		return
	}
	var userID int64
	if claims != nil && !claims.IsService() {
		// A first-time visitor needs no user row to see "not following".
		u, err := a.Users.FindBySub(r.Context(), claims.Subject)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		userID = -1
		if u != nil {
			userID = u.ID
		}
	}
	st, err := a.Follows.Status(r.Context(), t, userID)
	if err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	out := struct {
		Kind            string `json:"kind"`
		ID              string `json:"id"`
		Name            string `json:"name"`
		Followers       int64  `json:"followers"`
		FollowersHidden bool   `json:"followers_hidden,omitempty"`
		Following       *bool  `json:"following,omitempty"`
	}{Kind: string(t.Kind), ID: t.ID, Name: follow.Follow{Target: t, Name: st.Name}.DisplayName(), // the Follow button's default label
		Followers: st.Followers, FollowersHidden: st.FollowersHidden, Following: st.Following}
	if claims == nil {
		w.Header().Set("Cache-Control", "public, max-age=30")
	} else {
		w.Header().Set("Cache-Control", "private, no-store")
	}
	w.Header().Add("Vary", "Authorization")
	writeJSON(w, http.StatusOK, out)
}

// ---- ingest ----

// service checks that the request carries a service token with scope
// (auth.ScopePapersWrite, auth.ScopeUsersWrite); when not, it has answered
// 401 or 403 (what names the action in the 403's message) and returns
// false.
func (a *API) service(w http.ResponseWriter, r *http.Request, scope, what string) bool {
	claims, err := a.bearer(r)
	if err != nil {
		a.writeAuthError(w, r, err)
		return false
	}
	if claims == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="followfeed", scope="`+scope+`"`)
		writeProblem(w, Problem{Type: ProblemType(apperr.Unauthorized), Title: titles[apperr.Unauthorized], Status: http.StatusUnauthorized,
			Detail: "send a service token with scope " + scope, Instance: r.URL.Path})
		return false
	}
	if !claims.HasScope(scope) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="followfeed", error="insufficient_scope", scope="`+scope+`"`)
		has := "a user token"
		if len(claims.Scopes) > 0 {
			has = "a token with scope " + strings.Join(claims.Scopes, " ")
		}
		writeError(w, r, a.Logger, apperr.New(apperr.Forbidden, "%s needs a service token with scope %s; this is %s", what, scope, has))
		return false
	}
	return true
}

func (a *API) postPapers(w http.ResponseWriter, r *http.Request) {
	if !a.service(w, r, auth.ScopePapersWrite, "ingesting papers") {
		return
	}
	if !jsonish(r.Header.Get("Content-Type")) {
		writeError(w, r, a.Logger, apperr.New(apperr.BadRequest, "Content-Type must be application/json or application/x-ndjson"))
		return
	}
	papers, err := harvest.DecodePush(r.Body) // capped by its route (limitBody)
	if err != nil {
		a.recordPush(r, 0, err)
		writeError(w, r, a.Logger, err)
		return
	}
	res, err := a.Papers.Ingest(r.Context(), papers, catalog.SourcePush)
	if err != nil {
		a.recordPush(r, 0, err)
		writeError(w, r, a.Logger, err)
		return
	}
	a.recordPush(r, res.Received, nil)
	writeJSON(w, http.StatusOK, res)
}

// recordPush keeps the push's outcome in the source health.
func (a *API) recordPush(r *http.Request, records int, err error) {
	if a.Health != nil {
		a.Health.RecordPush(r.Context(), records, err)
	}
}

// ---- helpers ----

// jsonish accepts the content types a JSON body arrives with in practice:
// none, JSON and NDJSON, and the defaults of curl and fetch (form-urlencoded,
// text/plain). Accepting those opens no CSRF hole: every route that reads a
// body also requires a bearer token, which no cross-site form can send.
func jsonish(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/json", "application/x-ndjson", "application/jsonl", "text/plain", "application/x-www-form-urlencoded":
		return true
	}
	return strings.HasSuffix(mt, "+json")
}

// maxJSONBody bounds small JSON request bodies.
const maxJSONBody = 64 << 10

// decodeJSON reads a small JSON object into v, refusing unknown fields so a
// typo is an error rather than silently ignored. optional allows an empty
// body (or null, the same).
func decodeJSON(r *http.Request, v any, optional bool) error {
	if !jsonish(r.Header.Get("Content-Type")) {
		return apperr.New(apperr.BadRequest, "Content-Type must be application/json")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		// The cause stays: an *http.MaxBytesError (the route's cap) is 413.
		return &apperr.Error{Code: apperr.BadRequest, Message: "reading the body failed", Err: err}
	}
	if len(body) > maxJSONBody {
		return apperr.New(apperr.TooLarge, "the body exceeds %d KiB", maxJSONBody>>10)
	}
	switch strings.TrimSpace(string(body)) {
	case "":
		if optional {
			return nil
		}
		return apperr.New(apperr.BadRequest, "the body is empty; send a JSON object")
	case "null":
		// Where a route takes no body, null is none, as it always was (a
		// client's "no options"); elsewhere it is not an object (checkJSON).
		if optional {
			return nil
		}
	}
	// The strict pass names duplicate keys, keys differing only by case
	// and values of the wrong type by their JSON path; the decoder below
	// then meets only what passed it (or a syntax error).
	if err := checkJSON(body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return apperr.InvalidField(te.Field, "must be %s", jsonTypeWords(te.Type))
		case errors.As(err, &te):
			return apperr.New(apperr.BadRequest, "the body is not a JSON object")
		case errors.As(err, &se):
			return apperr.New(apperr.BadRequest, "the body is not valid JSON (at byte %d)", se.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return apperr.New(apperr.BadRequest, "the body is not valid JSON: it ends at byte %d, before its object does (was it cut off?)", len(body))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return apperr.InvalidField(field, "is not a known field")
		default:
			return apperr.New(apperr.BadRequest, "the body is not a JSON object")
		}
	}
	if dec.More() {
		return apperr.New(apperr.BadRequest, "the body has data after the JSON object")
	}
	return nil
}
