package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"followfeed/apperr"
	"followfeed/fediverse"
	"followfeed/feeds"
)

// ActivityPubRoutes serve the fediverse surface (ACTIVITYPUB=on): WebFinger,
// NodeInfo, the actors (JSON for ActivityPub clients, an HTML page for
// people), their inboxes, outboxes and collections, notes and activities.
type ActivityPubRoutes struct {
	Logger    *slog.Logger
	Fediverse *fediverse.Service
	Feeds     *feeds.Service
	PerIP     *Limiter
	// Version is the software version NodeInfo reports.
	Version string
}

// fediverseRoutes is the fediverse's route table (ACTIVITYPUB=on): discovery
// (WebFinger, NodeInfo), the actors, their inboxes (signed requests only),
// outboxes and collections, notes and activities. Its middleware:
//
//	limitBody  an inbox's cap, fediverse.MaxActivityBytes: 413 before
//	           anything else runs, as on every route that takes a body
//	limited    the per-IP limit (ActivityPubRoutes.limited)
//	bare       the actors' icon, a static image
//
// openapi.json documents every route here (tag fediverse); they exist
// only with ACTIVITYPUB=on.
func (h *ActivityPubRoutes) fediverseRoutes() []route {
	return []route{
		{"GET /.well-known/webfinger", h.limited(h.webfinger)},
		{"GET /.well-known/nodeinfo", h.limited(h.nodeinfoLinks)},
		{"GET /nodeinfo/2.1", h.limited(h.nodeinfo)},
		{"GET " + fediverse.ActorPrefix + "{handle}", h.limited(h.actor)},
		{"POST " + fediverse.ActorPrefix + "{handle}/inbox", limitBody(fediverse.MaxActivityBytes, h.limited(h.inbox))},
		{"POST " + fediverse.SharedInbox, limitBody(fediverse.MaxActivityBytes, h.limited(h.inbox))},
		{"GET " + fediverse.ActorPrefix + "{handle}/outbox", h.limited(h.outbox)},
		{"GET " + fediverse.ActorPrefix + "{handle}/followers", h.limited(h.collection)},
		{"GET " + fediverse.ActorPrefix + "{handle}/following", h.limited(h.collection)},
		{"GET " + fediverse.NotePrefix + "{id}", h.limited(h.note)},
		{"GET " + fediverse.ActivityPrefix + "{id}", h.limited(h.activity)},
		{"GET " + fediverse.InstanceActor, h.limited(h.instance)},
		{"GET " + fediverse.IconPath, bare(serveActorIcon)},
	}
}

func (h *ActivityPubRoutes) limited(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, retry := h.PerIP.Allow(clientIP(r)); !ok {
			rateLimited(w, r, retry, "too many requests from this address; slow down")
			return
		}
		next(w, r)
	}
}

// writeActivityJSON answers an ActivityPub document in the media type the
// client asked for: application/ld+json with the ActivityStreams profile,
// exactly as ActivityPub (§3.2) writes it and openapi.json documents it
// (JSON is UTF-8 by definition: no charset parameter), else
// application/activity+json; charset=utf-8, as Mastodon serves it.
func writeActivityJSON(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	ct := fediverse.ContentTypeActivity + "; charset=utf-8"
	if strings.Contains(r.Header.Get("Accept"), "application/ld+json") && !strings.Contains(r.Header.Get("Accept"), fediverse.ContentTypeActivity) {
		ct = fediverse.ContentTypeLD
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Add("Vary", "Accept")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (h *ActivityPubRoutes) writeDoc(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	writeActivityJSON(w, r, http.StatusOK, b)
}

// wantsActivity reports whether the client asked for an ActivityPub
// document rather than a page.
func wantsActivity(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/activity+json") || strings.Contains(a, "application/ld+json") ||
		strings.Contains(a, "application/json")
}

func (h *ActivityPubRoutes) webfinger(w http.ResponseWriter, r *http.Request) {
	jrd, err := h.Fediverse.WebFinger(r.Context(), r.URL.Query().Get("resource"))
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	b, _ := json.Marshal(jrd)
	w.Header().Set("Content-Type", "application/jrd+json; charset=utf-8")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}

func (h *ActivityPubRoutes) nodeinfoLinks(w http.ResponseWriter, r *http.Request) {
	writeJSONCached(w, map[string]any{"links": []map[string]string{{
		"rel":  "http://nodeinfo.diaspora.software/ns/schema/" + fediverse.NodeInfoVersion,
		"href": h.Fediverse.URL("/nodeinfo/" + fediverse.NodeInfoVersion),
	}}}, "application/json")
}

func (h *ActivityPubRoutes) nodeinfo(w http.ResponseWriter, r *http.Request) {
	n, err := h.Fediverse.NodeInfoDocument(r.Context(), h.Version)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	writeJSONCached(w, n, `application/json; profile="http://nodeinfo.diaspora.software/ns/schema/2.1#"`)
}

func writeJSONCached(w http.ResponseWriter, v any, ct string) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=1800")
	_, _ = w.Write(b)
}

// resolve reads the {handle} of the path.
func (h *ActivityPubRoutes) resolve(w http.ResponseWriter, r *http.Request) (fediverse.ActorInfo, bool) {
	info, err := h.Fediverse.ResolveHandle(r.Context(), r.PathValue("handle"))
	if err != nil {
		writeError(w, r, h.Logger, err)
		return info, false
	}
	return info, true
}

// actorPage is the actor's page for people (the public feed's page).
type actorPage struct {
	Info   fediverse.ActorInfo
	Feeds  map[string]string
	Papers []actorPaper
}

type actorPaper struct{ Title, URL, Authors string }

func (h *ActivityPubRoutes) actor(w http.ResponseWriter, r *http.Request) {
	info, ok := h.resolve(w, r)
	if !ok {
		return
	}
	if wantsActivity(r) {
		doc, err := h.Fediverse.ActorDocument(r.Context(), info)
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		h.writeDoc(w, r, doc)
		return
	}
	papers, err := h.Fediverse.Recent(r.Context(), info, 20)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	p := actorPage{Info: info, Feeds: map[string]string{}}
	for _, f := range feeds.Formats {
		p.Feeds[string(f)] = h.Feeds.PublicURL(info.Target, f)
	}
	for _, x := range papers {
		var names []string
		for _, a := range x.Authors {
			names = append(names, a.Name)
		}
		p.Papers = append(p.Papers, actorPaper{Title: x.Title, URL: x.AbsURL, Authors: strings.Join(names, ", ")})
	}
	w.Header().Set("Vary", "Accept")
	renderPage(w, r, h.Logger, http.StatusOK, "actor.html", page{Title: info.Name, Data: p, Meta: []meta{},
		Links: []pageLink{
			{Rel: "alternate", Type: fediverse.ContentTypeActivity, Href: info.ID},
			{Rel: "alternate", Type: "application/atom+xml", Href: p.Feeds["atom"]},
		}})
}

func (h *ActivityPubRoutes) inbox(w http.ResponseWriter, r *http.Request) {
	// Capped by its route (limitBody): a body that goes on past
	// fediverse.MaxActivityBytes fails the read with an
	// *http.MaxBytesError, which writeError answers 413.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			err = apperr.New(apperr.BadRequest, "the body could not be read")
		}
		writeError(w, r, h.Logger, err)
		return
	}
	err = h.Fediverse.Receive(r.Context(), r.PathValue("handle"), fediverse.Signed{
		Method: r.Method, RequestURI: r.URL.RequestURI(), Host: r.Host, Header: r.Header, Body: body,
	})
	if err != nil {
		if apperr.CodeOf(err) == apperr.Unauthorized {
			w.Header().Set("WWW-Authenticate", `Signature realm="followfeed", headers="(request-target) host date digest"`)
		}
		writeError(w, r, h.Logger, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *ActivityPubRoutes) outbox(w http.ResponseWriter, r *http.Request) {
	info, ok := h.resolve(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if q.Get("page") == "" && q.Get("max_id") == "" {
		c, err := h.Fediverse.Outbox(r.Context(), info)
		if err != nil {
			writeError(w, r, h.Logger, err)
			return
		}
		h.writeDoc(w, r, c)
		return
	}
	var maxID int64
	if v := q.Get("max_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			writeError(w, r, h.Logger, apperr.InvalidField("max_id", "must be a positive whole number (the next link gives it)"))
			return
		}
		maxID = n
	}
	page, err := h.Fediverse.OutboxPage(r.Context(), info, maxID)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	h.writeDoc(w, r, page)
}

func (h *ActivityPubRoutes) collection(w http.ResponseWriter, r *http.Request) {
	info, ok := h.resolve(w, r)
	if !ok {
		return
	}
	if strings.HasSuffix(r.URL.Path, "/following") {
		h.writeDoc(w, r, h.Fediverse.Following(info))
		return
	}
	c, err := h.Fediverse.Followers(r.Context(), info)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	h.writeDoc(w, r, c)
}

func pathID(w http.ResponseWriter, r *http.Request, logger *slog.Logger) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n < 1 {
		writeError(w, r, logger, apperr.New(apperr.NotFound, "no such document"))
		return 0, false
	}
	return n, true
}

func (h *ActivityPubRoutes) note(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, h.Logger)
	if !ok {
		return
	}
	doc, deleted, err := h.Fediverse.NoteDocument(r.Context(), id)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	status := http.StatusOK
	if deleted {
		status = http.StatusGone
	}
	writeActivityJSON(w, r, status, doc)
}

func (h *ActivityPubRoutes) activity(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, h.Logger)
	if !ok {
		return
	}
	doc, err := h.Fediverse.ActivityDocument(r.Context(), id)
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	writeActivityJSON(w, r, http.StatusOK, doc)
}

func (h *ActivityPubRoutes) instance(w http.ResponseWriter, r *http.Request) {
	doc, err := h.Fediverse.InstanceDocument(r.Context())
	if err != nil {
		writeError(w, r, h.Logger, err)
		return
	}
	h.writeDoc(w, r, doc)
}

// actorIcon is every actor's avatar: a 256×256 PNG in followfeed's colours
// (Mastodon shows no SVG avatars), drawn once.
var actorIcon = sync.OnceValue(func() []byte {
	const n = 256
	img := image.NewRGBA(image.Rect(0, 0, n, n))
	bg, fg := color.RGBA{0x1f, 0x4e, 0x79, 0xff}, color.RGBA{0xf4, 0xf1, 0xe8, 0xff}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			c := bg
			// Three feed arcs in the lower left corner, and its dot.
			dx, dy := x-56, n-56-y
			d2 := dx*dx + dy*dy
			switch {
			case dx >= 0 && dy >= 0 && d2 <= 22*22:
				c = fg
			case dx >= 0 && dy >= 0 && (d2 >= 70*70 && d2 <= 92*92 || d2 >= 130*130 && d2 <= 152*152):
				c = fg
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
})

func serveActorIcon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(actorIcon())
}
