package httpapi

import (
	"log/slog"
	"net/http"
	"strings"

	"followfeed/apperr"
	"followfeed/web"
)

// buttonFile is the embeddable Follow button's script in web/static.
const buttonFile = "follow-button.js"

// ButtonURL is the versioned, immutable URL of the Follow button script.
func ButtonURL() string {
	_, v, _ := web.Asset(buttonFile)
	return "/embed/follow-button." + v + ".js"
}

// Embed serves the Follow button script and its demo page.
type Embed struct {
	Logger *slog.Logger
	// FrameOrigins may frame the demo (CORS_ORIGINS); nobody else.
	FrameOrigins []string
	// DemoToken mints a token for the demo's signed-in user; nil in
	// production, where the demo shows the signed-out button.
	DemoToken func() (string, error)
	// PublicURL makes the snippet on the demo page absolute.
	PublicURL string
}

// script serves /embed/follow-button.js (cached 5 minutes, for hosts that
// want the latest) and /embed/follow-button.<hash>.js (immutable).
func (e *Embed) script(w http.ResponseWriter, r *http.Request) {
	body, version, err := web.Asset(buttonFile)
	name := r.PathValue("file")
	if err != nil || (name != buttonFile && name != "follow-button."+version+".js") {
		writeError(w, r, e.Logger, apperr.New(apperr.NotFound, "no such script: the follow button is /embed/%s", buttonFile))
		return
	}
	serveAsset(w, r, name, body, version, name != buttonFile)
}

func (e *Embed) demo(w http.ResponseWriter, r *http.Request) {
	ancestors := "'self'"
	for _, o := range e.FrameOrigins {
		ancestors += " " + o
	}
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy(ancestors))
	p := page{Title: "Follow button demo", Link: e.PublicURL + ButtonURL(),
		Scripts: []string{"/static/demo.js?v=" + assetVersion("demo.js"), ButtonURL()}}
	if e.DemoToken != nil && !strings.EqualFold(r.URL.Query().Get("signed_out"), "1") {
		tok, err := e.DemoToken()
		if err != nil {
			writeError(w, r, e.Logger, err)
			return
		}
		p.Meta = []meta{{Name: "followfeed-demo-token", Content: tok}}
		p.Email = "demo-user"
	}
	renderPage(w, r, e.Logger, http.StatusOK, "demo.html", p)
}
