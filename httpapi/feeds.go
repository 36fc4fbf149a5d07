package httpapi

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/feeds"
	"followfeed/follow"
)

// renderVersion is part of every ETag: bump it when rendering changes, so
// feed readers refetch. r3: private items carry feedback links. r4: a
// feed without items is dated by its Last-Modified, not 1970.
const renderVersion = "r4"

// feedMaxAge is how long feed readers and caches may reuse a feed.
const feedMaxAge = 5 * time.Minute

// FeedRoutes serve private and public feeds.
type FeedRoutes struct {
	Logger *slog.Logger
	Feeds  *feeds.Service
	// Misses limits requests with unknown tokens per IP (guessing).
	Misses *Limiter
	PerIP  *Limiter
	// ActorURL is the ActivityPub actor of a public feed's target (the
	// asked id's: any id of a person is the one actor) with ACTIVITYPUB=on,
	// else nil. A public feed then links it: a Link header and, in Atom
	// and RSS, an alternate link of type application/activity+json.
	ActorURL func(follow.Target) string
}

// splitExt splits "cs.LG.atom" into ("cs.LG", "atom").
func splitExt(file string) (string, string) {
	i := strings.LastIndexByte(file, '.')
	if i <= 0 {
		return file, ""
	}
	return file[:i], file[i+1:]
}

func (h *FeedRoutes) notFound(w http.ResponseWriter, r *http.Request, detail string) {
	writeProblem(w, Problem{Type: ProblemType(apperr.NotFound), Title: titles[apperr.NotFound], Status: http.StatusNotFound,
		Detail: detail, Instance: redactPath(r.URL.Path)})
}

// private serves /feeds/{token}.{atom,rss,json,opml} and the per-follow
// /feeds/{token}/{kind}/{id}.{atom,rss,json}.
func (h *FeedRoutes) private(w http.ResponseWriter, r *http.Request) {
	privateHeaders(w)
	if ok, retry := h.PerIP.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests from this address; slow down")
		return
	}
	token, ext := splitExt(r.PathValue("file"))
	var only *follow.Target
	if r.PathValue("token") != "" {
		id := token
		token = r.PathValue("token")
		t, err := follow.ParseTarget(r.PathValue("kind"), id)
		if err != nil {
			h.notFound(w, r, "no such feed: the follow in this URL is not valid")
			return
		}
		only = &t
	}
	format, ok := feeds.ParseFormat(ext)
	if !ok && !(ext == "opml" && only == nil) {
		h.notFound(w, r, "no such feed: use .atom, .rss or .json (or .opml for the list of your feeds)")
		return
	}
	if !feeds.WellFormed(token) {
		// Not a token at all: a public feed path such as /feeds/cs.atom
		// has no meaning here.
		h.miss(w, r)
		return
	}
	st, limit, ok := h.resolve(w, r, token, h.Feeds.Tokens().Lookup)
	if !ok {
		return
	}
	scope := "u"
	if only != nil {
		scope = "f" + shortHash(only.Key())
	}
	if ext == "opml" {
		perFollow, err := parsePerFollow(r.URL.Query().Get("per_follow"))
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		kind := "opml"
		if perFollow {
			kind = "opml-per-follow"
		}
		etag := fmt.Sprintf(`W/"%s-%s-%d-%s"`, renderVersion, scope, st.Version, kind)
		serve(w, r, h.Logger, etag, st.ChangedAt, "private", feeds.ContentTypeOPML, func() ([]byte, error) {
			return h.Feeds.OPML(r.Context(), token, st, perFollow)
		})
		return
	}
	// The validator: the feed version and the newest seq of the rows of
	// the user's follows (feeds.Validators), from this process's cache
	// while the version and the high seq the lookup read are those it was
	// computed at. A per-follow feed shares its user's (conservative: a
	// match of another follow changes it too).
	v, err := h.Feeds.Validator(r.Context(), st)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	unread, err := parseUnread(r.URL.Query().Get("unread"))
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	etag := fmt.Sprintf(`W/"%s-%s-%d.%d-%s-%d%s"`, renderVersion, scope, v.Version, v.Seq, format, limit, unreadTag(unread))
	serve(w, r, h.Logger, etag, v.Modified, "private", format.ContentType(), func() ([]byte, error) {
		feed, err := h.Feeds.Private(r.Context(), token, st, v, feeds.Request{Format: format, Limit: limit, Only: only, Unread: unread})
		if err != nil {
			return nil, err
		}
		return feeds.Render(format, feed)
	})
}

// best serves the ranked feed /feeds/{token}/best.{atom,rss,json} in
// format f: the user's newest matches best first. Its ETag is the private
// feed's validator (version and newest seq) and when the user's ranking
// model was stored, read in the token lookup's one statement
// (Tokens.LookupRanked), so a retraining changes it and nothing else
// does; Last-Modified is the later of the two. A path whose first segment
// is not a token is a public feed's (/feeds/{kind}/best.atom), served as
// such: no public feed has the id "best", but the path form is theirs.
func (h *FeedRoutes) best(f feeds.Format) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.PathValue("token")
		if strings.HasPrefix(token, feeds.TokenPrefix) && !feeds.WellFormed(token) {
			// A private feed's URL cut or mistyped, not a public feed's
			// kind: a 404 saying so, as a well-formed unknown token gets.
			privateHeaders(w)
			h.notFound(w, r, "no such feed: the link may have been rotated or cut; copy the current one from your settings")
			return
		}
		if !feeds.WellFormed(token) {
			r.SetPathValue("kind", token)
			r.SetPathValue("file", "best."+string(f))
			h.public(w, r)
			return
		}
		privateHeaders(w)
		if ok, retry := h.PerIP.Allow(clientIP(r)); !ok {
			rateLimited(w, r, retry, "too many requests from this address; slow down")
			return
		}
		st, limit, ok := h.resolve(w, r, token, h.Feeds.Tokens().LookupRanked)
		if !ok {
			return
		}
		st, err := h.Feeds.FirstModel(r.Context(), token, st)
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		v, err := h.Feeds.Validator(r.Context(), st)
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		var model int64 // µs; 0 only without a ranking
		modified := v.Modified
		if !st.ModelAt.IsZero() {
			model = st.ModelAt.UnixMicro()
			if st.ModelAt.After(modified) {
				modified = st.ModelAt
			}
		}
		unread, err := parseUnread(r.URL.Query().Get("unread"))
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		etag := fmt.Sprintf(`W/"%s-b-%d.%d.%d-%s-%d%s"`, renderVersion, v.Version, v.Seq, model, f, limit, unreadTag(unread))
		serve(w, r, h.Logger, etag, modified, "private", f.ContentType(), func() ([]byte, error) {
			feed, err := h.Feeds.Private(r.Context(), token, st, v, feeds.Request{Format: f, Limit: limit, Best: true, Unread: unread})
			if err != nil {
				return nil, err
			}
			return feeds.Render(f, feed)
		})
	})
}

// resolve finds the feed state of token with lookup (Tokens.Lookup or
// LookupRanked: one statement) and reads ?limit=. When it cannot go on (an
// unknown token, a bad limit, an error) it has answered the request and
// returns false.
func (h *FeedRoutes) resolve(w http.ResponseWriter, r *http.Request, token string,
	lookup func(context.Context, string) (feeds.State, error)) (feeds.State, int, bool) {
	st, err := lookup(r.Context(), token)
	if errors.Is(err, feeds.ErrUnknownToken) {
		h.miss(w, r)
		return st, 0, false
	}
	if err != nil {
		writeError(w, r, h.Logger, err)
		return st, 0, false
	}
	limit, err := feeds.ParseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		writeError(w, r, h.Logger, err)
		return st, 0, false
	}
	return st, limit, true
}

// parsePerFollow reads ?per_follow= of the OPML list: absent, "0" or
// "false" is the combined feed; "1" or "true" the per-follow feeds.
func parsePerFollow(v string) (bool, error) {
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, apperr.InvalidField("per_follow", "must be 1 (one feed per follow) or 0 (the combined feed, the default)")
}

// parseUnread reads a private feed's ?unread=: 1 (or true) leaves out
// the papers the user marked read or done; "", 0 (or false) is the whole
// feed.
func parseUnread(v string) (bool, error) {
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, apperr.InvalidField("unread", "must be 1 (leave out the papers you marked read or done) or 0 (every paper, the default)")
}

// unreadTag is an ETag's mark of a feed with ?unread=1: its items differ
// from the whole feed's at the same version.
func unreadTag(unread bool) string {
	if unread {
		return "-unread"
	}
	return ""
}

// miss answers an unknown token: 404, or 429 when one address guesses.
func (h *FeedRoutes) miss(w http.ResponseWriter, r *http.Request) {
	if ok, retry := h.Misses.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests for unknown feeds from this address")
		return
	}
	h.notFound(w, r, "no such feed: the link may have been rotated; copy the current one from your settings")
}

// public serves /feeds/{kind}/{id}.{atom,rss,json}.
func (h *FeedRoutes) public(w http.ResponseWriter, r *http.Request) {
	if ok, retry := h.PerIP.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests from this address; slow down")
		return
	}
	id, ext := splitExt(r.PathValue("file"))
	format, ok := feeds.ParseFormat(ext)
	if !ok {
		h.notFound(w, r, "no such feed: use .atom, .rss or .json")
		return
	}
	t, err := follow.ParseTarget(r.PathValue("kind"), id)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	// Queries and paper follows are a user's own: they
	// have private feeds only (a public one would show what someone tracks).
	if t.Kind != follow.Researcher && t.Kind != follow.Category && t.Kind != follow.Institution {
		h.notFound(w, r, "no such feed: public feeds exist for researchers, categories and institutions; a query or a followed paper has a private feed (GET /v1/me/feeds)")
		return
	}
	limit, err := feeds.ParseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	version, changed, err := h.Feeds.PublicVersion(r.Context(), t)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	// With ACTIVITYPUB=on the document links the feed's actor, so its
	// bytes differ from the same version's without: the ETag says which
	// (-ap), and a feed reader that cached one never gets a 304 for the other.
	actor, apTag := "", ""
	if h.ActorURL != nil {
		actor, apTag = h.ActorURL(t), "-ap"
		w.Header().Set("Link", "<"+actor+`>; rel="alternate"; type="`+feeds.ContentTypeActivity+`"`)
	}
	etag := fmt.Sprintf(`W/"%s-p%s-%d-%s-%d%s"`, renderVersion, shortHash(t.Key()), version, format, limit, apTag)
	serve(w, r, h.Logger, etag, changed, "public", format.ContentType(), func() ([]byte, error) {
		feed, err := h.Feeds.Public(r.Context(), t, version, changed, feeds.Request{Format: format, Limit: limit})
		if err != nil {
			return nil, err
		}
		feed.ActorURL = actor
		return feeds.Render(format, feed)
	})
}

func privateHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Robots-Tag", "noindex, nofollow")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

// serve answers a conditional GET: 304 when the validators match (without
// calling render), else the rendered body, gzipped when the client asks.
// visibility is "private" or "public" for Cache-Control.
func serve(w http.ResponseWriter, r *http.Request, logger *slog.Logger, etag string, modified time.Time, visibility, contentType string, render func() ([]byte, error)) {
	hd := w.Header()
	hd.Set("ETag", etag)
	if !modified.IsZero() {
		hd.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
	hd.Set("Cache-Control", fmt.Sprintf("%s, max-age=%d", visibility, int(feedMaxAge.Seconds())))
	hd.Add("Vary", "Accept-Encoding")
	if notModified(r, etag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, err := render()
	if err != nil {
		writeError(w, r, logger, err)
		return
	}
	hd.Set("Content-Type", contentType)
	if len(body) > 1024 && acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer gzipPool.Put(gz)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = gz.Write(body)
			_ = gz.Close()
		}
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return gz
}}

// acceptsGzip reports whether Accept-Encoding lists gzip with a non-zero q.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.TrimSpace(k) == "q" {
				q, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
		return q > 0
	}
	return false
}

// notModified evaluates If-None-Match (weak comparison), or, only when that
// is absent, If-Modified-Since (RFC 9110 §13.2.2).
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if strings.TrimSpace(inm) == "*" {
			return true
		}
		want := strings.TrimPrefix(etag, "W/")
		for _, tag := range strings.Split(inm, ",") {
			if strings.TrimPrefix(strings.TrimSpace(tag), "W/") == want {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !modified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !modified.Truncate(time.Second).After(t)
	}
	return false
}

// ---- /v1/me/feeds ----

type feedLinks struct {
	Atom          string       `json:"atom"`
	RSS           string       `json:"rss"`
	JSON          string       `json:"json"`
	OPML          string       `json:"opml"`
	OPMLPerFollow string       `json:"opml_per_follow"`
	Best          formatLinks  `json:"best"`
	Follows       []followLink `json:"follows"`
}

// formatLinks are one feed's URLs in the three formats.
type formatLinks struct {
	Atom string `json:"atom"`
	RSS  string `json:"rss"`
	JSON string `json:"json"`
}

type followLink struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
	Atom string `json:"atom"`
	RSS  string `json:"rss"`
	JSON string `json:"json"`
}

func (a *API) feedLinks(r *http.Request, u *account.User, token string) (feedLinks, error) {
	fs, err := a.Follows.All(r.Context(), u.ID)
	if err != nil {
		return feedLinks{}, err
	}
	out := feedLinks{
		Atom: a.Feeds.PrivateURL(token, feeds.Atom, nil), RSS: a.Feeds.PrivateURL(token, feeds.RSS, nil),
		JSON: a.Feeds.PrivateURL(token, feeds.JSON, nil), OPML: a.Feeds.OPMLURL(token, false),
		OPMLPerFollow: a.Feeds.OPMLURL(token, true),
		Best: formatLinks{Atom: a.Feeds.BestURL(token, feeds.Atom), RSS: a.Feeds.BestURL(token, feeds.RSS),
			JSON: a.Feeds.BestURL(token, feeds.JSON)},
		Follows: make([]followLink, 0, len(fs)),
	}
	for _, f := range fs {
		t := f.Target
		name := f.OwnerName()
		out.Follows = append(out.Follows, followLink{Kind: string(t.Kind), ID: t.ID, Name: name,
			Atom: a.Feeds.PrivateURL(token, feeds.Atom, &t), RSS: a.Feeds.PrivateURL(token, feeds.RSS, &t),
			JSON: a.Feeds.PrivateURL(token, feeds.JSON, &t)})
	}
	return out, nil
}

func (a *API) getFeeds(w http.ResponseWriter, r *http.Request, u *account.User) error {
	tok, err := a.Feeds.Tokens().Token(r.Context(), u.ID)
	if err != nil {
		return err
	}
	links, err := a.feedLinks(r, u, tok)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, links)
	return nil
}

func (a *API) rotateFeedToken(w http.ResponseWriter, r *http.Request, u *account.User) error {
	tok, err := a.Feeds.Tokens().Rotate(r.Context(), u.ID)
	if err != nil {
		return err
	}
	links, err := a.feedLinks(r, u, tok)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, links)
	return nil
}
