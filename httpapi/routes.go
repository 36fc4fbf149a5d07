package httpapi

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/harvest"
	"followfeed/identity"
)

// Every route the service serves is a line of one table below, one table
// per surface: the JSON API, feeds, pages, and the operations endpoints.
// A line is a ServeMux pattern (method and path; a path alone is every
// method) and its handler, wrapped in the middleware that route gets.
// A route whose method can carry a body (POST, PUT, PATCH) caps it first,
// with limitBody and the route's limit: 413 before anything else runs.
// Around every table, NewHandler puts the same chain, outermost first:
//
//	forwardedFor  the client's address behind TRUSTED_PROXIES
//	observe       nosniff, the access log line, the request metrics, a panic as a 500
//	cors          CORS headers and preflights for the host origins, on /v1/ only
//	muxProblems   the mux's own 404 and 405 (with Allow) as problem documents
//
// A new surface is a table here (a method of Product, whose handlers are a
// field of Product) and that table in Product.routes.

// route is one line of a route table.
type route struct {
	pattern string // "GET /v1/me"; a path alone is a route of every method
	handler http.Handler
}

// handle adds routes to mux.
func handle(mux *http.ServeMux, routes []route) {
	for _, rt := range routes {
		mux.Handle(rt.pattern, rt.handler)
	}
}

// NewHandler returns the root handler: the operations endpoints, the
// product's routes (Options.Routes) and the chain above around them.
func NewHandler(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	handle(mux, adminRoutes(o))
	if o.Routes != nil {
		o.Routes(mux)
	}
	return forwardedFor(observe(cors(muxProblems(mux), o.CORSOrigins), o.Logger, newHTTPMetrics(o.Registry)), o.TrustedProxies)
}

// Product is the handlers of the product's surfaces, which app builds from
// the domain services. Register is its Options.Routes. The routes of a nil
// field are registered all the same (a test that needs one surface sets
// one field) and must not be requested.
type Product struct {
	API      *API
	Feeds    *FeedRoutes
	Status   *StatusRoutes
	Email    *EmailPages
	Settings *Settings
	Embed    *Embed
	// Fediverse is the ActivityPub surface; nil when ACTIVITYPUB is off,
	// and then none of its routes exists.
	Fediverse *ActivityPubRoutes
}

// Register adds the routes of every product surface to mux.
func (p *Product) Register(mux *http.ServeMux) { handle(mux, p.routes()) }

// routes is the tables of every product surface, in one list.
func (p *Product) routes() []route {
	rs := slices.Concat(p.apiRoutes(), p.feedRoutes(), p.pageRoutes())
	if p.Fediverse != nil {
		rs = append(rs, p.Fediverse.fediverseRoutes()...)
	}
	return rs
}

// bare is a route with no middleware of its own: the handler checks
// what it needs itself (a per-IP limit, the session, the CSRF token).
func bare(h http.HandlerFunc) http.Handler { return h }

// apiRoutes is the JSON API: every /v1 route, and the document that
// describes the service's routes. Its middleware:
//
//	user    a signed-in user's bearer token (a service token is a 403), the
//	        per-IP and per-user limits, the handler's error as a problem
//	        (API.userRoute)
//	public  the per-IP limit (API.ipLimited); the handler reads a token
//	        itself where one counts (a service token's writes, the follow
//	        status of a signed-in user)
func (p *Product) apiRoutes() []route {
	a, st := p.API, p.Status
	user := a.userRoute
	public := func(h http.HandlerFunc) http.Handler { return a.ipLimited(h) }
	return []route{
		{"GET /v1/me", user(a.getMe)},
		{"PATCH /v1/me", limitBody(maxJSONBody, user(a.patchMe))},
		{"DELETE /v1/me", user(a.deleteMe)},
		{"GET /v1/me/export", user(a.getExport)},
		{"GET /v1/me/follows", user(a.listFollows)},
		{"PUT /v1/me/follows/{kind}/{id}", limitBody(maxJSONBody, user(a.putFollow))},
		{"DELETE /v1/me/follows/{kind}/{id}", user(a.deleteFollow)},
		{"GET /v1/me/feeds", user(a.getFeeds)},
		{"POST /v1/me/feed-token", limitBody(maxJSONBody, user(a.rotateFeedToken))},
		{"POST /v1/me/email-links/revoke", limitBody(maxJSONBody, user(a.revokeEmailLinks))},
		{"GET /v1/search/preview", user(a.previewSearch)},

		// Push channels (channels.go).
		{"GET /v1/me/channels", user(a.listChannels)},
		{"POST /v1/me/channels", limitBody(maxJSONBody, user(a.createChannel))},
		{"GET /v1/me/channels/{id}", user(a.getChannel)},
		{"PATCH /v1/me/channels/{id}", limitBody(maxJSONBody, user(a.patchChannel))},
		{"DELETE /v1/me/channels/{id}", user(a.deleteChannel)},
		{"POST /v1/me/channels/{id}/test", limitBody(maxJSONBody, user(a.testChannel))},
		{"POST /v1/me/channels/{id}/rotate-secret", limitBody(maxJSONBody, user(a.rotateChannelSecret))},
		{"GET /v1/me/channels/{id}/deliveries", user(a.channelDeliveries)},

		// The Follow button's count and state, the host's papers and the
		// host's erasure of a user it deleted (service tokens).
		{"GET /v1/follows/{kind}/{id}", public(a.followStatus)},
		{"POST /v1/papers", limitBody(harvest.MaxPushBytes, public(a.postPapers))},
		{"DELETE /v1/users/{sub}", public(a.deleteUser)},

		// The identity registry (identity.go): the host's writes (service
		// token), public lookups, a user's "not this person".
		{"PUT /v1/researchers", limitBody(identity.MaxBodyBytes, public(a.putIdentities(follow.Researcher)))},
		{"GET /v1/researchers/{id}", public(a.getIdentity(follow.Researcher))},
		{"DELETE /v1/researchers/{id}/ids/{other}", public(a.splitIdentity(follow.Researcher))},
		{"PUT /v1/institutions", limitBody(identity.MaxBodyBytes, public(a.putIdentities(follow.Institution)))},
		{"GET /v1/institutions/{id}", public(a.getIdentity(follow.Institution))},
		{"DELETE /v1/institutions/{id}/ids/{other}", public(a.splitIdentity(follow.Institution))},
		{"GET /v1/researchers/{id}/disputes", public(a.listDisputes)},
		{"POST /v1/me/papers/{arxiv_id}/not-this-person", limitBody(maxJSONBody, user(a.notThisPerson))},

		// A user's feedback on papers (feedback.go).
		{"PUT /v1/me/papers/{arxiv_id}/feedback", limitBody(maxJSONBody, user(a.putFeedback))},
		{"GET /v1/me/feedback", user(a.listFeedback)},
		// A user's read state of papers (papers.go).
		{"PUT /v1/me/papers/{arxiv_id}/state", limitBody(maxJSONBody, user(a.putPaperState))},
		{"GET /v1/me/papers", user(a.listPapers)},
		{"POST /v1/me/papers/read", limitBody(maxJSONBody, user(a.markAllRead))},
		{"GET /v1/me/remember-opened", user(a.getRememberOpened)},
		{"PUT /v1/me/remember-opened", limitBody(maxJSONBody, user(a.putRememberOpened))},

		// A user's mutes (mutes.go).
		{"POST /v1/me/mutes", limitBody(maxJSONBody, user(a.postMute))},
		{"GET /v1/me/mutes", user(a.listMutes)},
		{"DELETE /v1/me/mutes/{id}", user(a.deleteMute)},
		{"GET /v1/me/papers/{arxiv_id}/why", user(a.getWhy)},

		// The sources' health (status.go; its own per-IP limit).
		{"GET /v1/status", bare(st.statusJSON)},
		{"GET /openapi.json", bare(serveOpenAPI)},
	}
}

// feedRoutes is the feeds: a user's private feeds (the token is the
// credential) with the OPML list of them, and the public feeds of a
// category, researcher or institution. Each handler takes its per-IP
// token first, and a private feed's unknown tokens count against
// FeedRoutes.Misses. Their hub links (WebSub) come from package feeds.
// The ranked feed's literal paths are more specific than the public
// feeds' pattern, which they would otherwise fall into (a first segment
// that is not a token goes on to the public feeds: FeedRoutes.best).
func (p *Product) feedRoutes() []route {
	f := p.Feeds
	return []route{
		{"GET /feeds/{file}", bare(f.private)},                // {token}.atom|rss|json|opml
		{"GET /feeds/{token}/best.atom", f.best(feeds.Atom)},  // all follows, best first
		{"GET /feeds/{token}/best.rss", f.best(feeds.RSS)},    // the same in RSS
		{"GET /feeds/{token}/best.json", f.best(feeds.JSON)},  // and JSON Feed
		{"GET /feeds/{token}/{kind}/{file}", bare(f.private)}, // one follow: {id}.atom|rss|json
		{"GET /feeds/{kind}/{file}", bare(f.public)},          // category/cs.LG.atom, ...
	}
}

// pageRoutes is the HTML pages and their assets. The settings pages check
// the session cookie (or a mail's manage link) and, on every POST, the
// CSRF token themselves; sign-in, the mail links and the status page take
// their per-IP token first.
func (p *Product) pageRoutes() []route {
	s, e, m, st := p.Settings, p.Embed, p.Email, p.Status
	return []route{
		{"GET /{$}", http.RedirectHandler("/settings", http.StatusSeeOther)}, // and on to landingPage
		{"GET /about", bare(s.about)},
		{"GET /login", bare(s.login)},
		{"POST /login", limitBody(maxFormBody, bare(s.login))},
		{"POST /logout", limitBody(maxFormBody, bare(s.logout))},

		// The settings pages (settings.go), the channel forms
		// (settings_channels.go), the feedback list (settings_feedback.go).
		// GET /settings, the URL mails and the host link to, redirects
		// to a page (landingPage); each page's forms POST to the routes
		// they always did, which return to the page (formSections).
		{"GET /settings", bare(s.page)},
		{"GET /settings/follows", bare(s.show("follows"))},
		{"GET /settings/feeds", bare(s.show("feeds"))},
		{"GET /settings/channels", bare(s.show("channels"))},
		{"GET /settings/email", bare(s.show("email"))},
		{"GET /settings/account", bare(s.show("account"))},
		{"POST /settings/follows", s.limitForm(bare(s.postFollow))},
		{"POST /settings/feed-token", s.limitForm(bare(s.postRotate))},
		{"POST /settings/email", s.limitForm(bare(s.postEmail))},
		{"POST /settings/channels", s.limitForm(bare(s.postChannelAdd))},
		{"POST /settings/channels/{id}", s.limitForm(bare(s.postChannel))},
		{"GET /settings/channels/secret/{nonce}", bare(s.secretPage)},
		{"POST /settings/not-this-person", s.limitForm(bare(s.postNotThisPerson))},
		{"POST /settings/feedback", s.limitForm(bare(s.postFeedback))},
		{"POST /settings/pause", s.limitForm(bare(s.postPause))}, // settings_pause.go
		// The inbox (inbox_page.go).
		{"GET /inbox", bare(s.inboxPage)},
		{"POST /inbox/state", s.limitForm(bare(s.postInboxState))},
		{"POST /inbox/read", s.limitForm(bare(s.postInboxRead))},
		{"POST /inbox/feedback", s.limitForm(bare(s.postInboxFeedback))},
		{"POST /inbox/mute", s.limitForm(bare(s.postInboxMute))},
		// "Remember what I opened" (settings_opened.go).
		{"POST /settings/remember-opened", s.limitForm(bare(s.postRememberOpened))},
		// Its mutes section (settings_mutes.go).
		{"POST /settings/mutes", s.limitForm(bare(s.postMuteAdd))},
		{"POST /settings/mutes/{id}", s.limitForm(bare(s.postMuteRemove))},
		// The user's data (userdata.go): the download, and the erase
		// page and its form.
		{"GET /settings/export", bare(s.exportDownload)},
		{"GET /settings/erase", bare(s.erasePage)},
		{"POST /settings/erase", s.limitForm(bare(s.postErase))},

		// The links in mail (pages.go): a GET shows a button, the POST acts.
		{"GET /unsubscribe/{token}", bare(m.unsubscribePage)},
		{"POST /unsubscribe/{token}", limitBody(maxLinkBody, bare(m.unsubscribe))},
		{"GET /confirm/{token}", bare(m.confirmPage)},
		{"POST /confirm/{token}", limitBody(maxLinkBody, bare(m.confirm))},
		{"GET /not-this-person/{token}", bare(m.disputePage)},
		{"POST /not-this-person/{token}", limitBody(maxLinkBody, bare(m.dispute))},
		{"GET /feedback/{token}", bare(m.feedbackLinkPage)},
		{"GET /open/{token}", bare(m.openLink)},
		{"POST /feedback/{token}", limitBody(maxLinkBody, bare(m.feedbackLinkPost))},

		{"GET /status", bare(st.statusPage)},

		// The Follow button's script, its versioned twin and its demo
		// (embed.go); the pages' assets.
		{"GET /embed/{file}", bare(e.script)},
		{"GET /embed/demo", bare(e.demo)},
		{"GET /static/{file}", bare(serveStatic)},
		{"GET /favicon.ico", bare(serveFavicon)},
	}
}

// adminRoutes is the operations endpoints, which every process serves (a
// worker's HTTP_ADDR too): liveness, readiness, the metrics (with a
// Registry) and the River UI (with Admin and an ADMIN_PASSWORD) behind
// adminGuard: basic auth, failed sign-ins limited per signed-in browser
// or else per address and overall, no cross-origin writes, never framed.
func adminRoutes(o Options) []route {
	ready := o.Ready
	if ready != nil {
		ready = cachedReady(ready)
	}
	table := []route{
		{"GET /healthz", bare(healthz)},
		{"GET /readyz", readyHandler(ready)},
	}
	if o.Registry != nil && !o.MetricsApart {
		table = append(table, route{"GET /metrics", metricsHandler(o.Registry, o.Queried)})
	}
	if o.Admin == nil || o.AdminPassword == "" {
		return table
	}
	// Failed sign-ins limited per signed-in browser, else per address
	// and overall (admin_signin.go).
	signIns := newAdminSignIns(o.AdminUser, o.AdminPassword, o.SecretKey, o.SecureCookies)
	guard := func(h http.Handler) http.Handler { return adminGuard(h, "followfeed jobs", signIns) }
	return append(table,
		// The subtree serves the methods the UI and its API use (as
		// openapi.json documents); any other is a 405 before the
		// credential is asked for.
		route{AdminPrefix + "/", only(limitBody(maxAdminBody, guard(o.Admin)), "GET", "HEAD", "POST", "PUT", "PATCH")},
		// The bare prefix: GET is sent to the UI; any other method is a
		// 405 (a problem document, see refusal), not the mux's redirect.
		// The redirect asks for the credential too, so the spec's
		// /admin/jobs answers what /admin/jobs/{page} does to strangers.
		route{AdminPrefix, only(guard(http.RedirectHandler(AdminPrefix+"/", http.StatusMovedPermanently)), "GET", "HEAD")},
	)
}

// metricsHandler serves reg's metrics as they are, and queried's (the
// collectors that read the database) gathered at most once a second
// (cachedGatherer); queried may be nil.
func metricsHandler(reg *prometheus.Registry, queried prometheus.Gatherer) http.Handler {
	var g prometheus.Gatherer = reg
	if queried != nil {
		g = prometheus.Gatherers{reg, &cachedGatherer{g: queried}}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{Registry: reg})
}

// NewMetricsHandler is the handler of METRICS_ADDR, where /metrics is
// served apart from the public listener (Options.MetricsApart): GET
// /metrics (as metricsHandler) with its access log line; anything else is
// a 404 problem.
func NewMetricsHandler(reg *prometheus.Registry, queried prometheus.Gatherer, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(reg, queried))
	return observe(muxProblems(mux), logger, newHTTPMetrics(nil))
}

// only serves methods with h and answers any other with a 405 problem
// whose Allow header lists them: the mux's own 405 cannot, for a pattern
// without a method.
func only(h http.Handler, methods ...string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allow)
			(&refusal{ResponseWriter: w, r: r}).WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
