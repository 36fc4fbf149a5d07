// Package web holds the HTML templates and static assets of followfeed's
// pages (settings, unsubscribe, confirmation, the embeddable Follow button
// and its demo). It has no handlers: package httpapi serves them.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

//go:embed timezones.txt
var timezonesTxt string

// Timezones lists the IANA zones the settings page offers, UTC first.
func Timezones() []string {
	var out []string
	for _, l := range strings.Split(timezonesTxt, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// Static is the tree served under /static/ (and the button under /embed/).
func Static() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	return sub
}

// Asset returns the bytes of a static file and a short content hash for
// versioned URLs.
func Asset(name string) ([]byte, string, error) {
	b, err := fs.ReadFile(Static(), name)
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256(b)
	return b, hex.EncodeToString(h[:])[:12], nil
}

var (
	parseOnce sync.Once
	parsed    map[string]*template.Template
	parseErr  error
)

var funcs = template.FuncMap{
	// weekdays are the weekday options: the form value lower-case (what
	// the API takes), the label capitalised (what people read).
	"weekdays": func() []struct{ Value, Label string } {
		out := make([]struct{ Value, Label string }, 7)
		for d := time.Sunday; d <= time.Saturday; d++ {
			out[d].Value, out[d].Label = strings.ToLower(d.String()), d.String()
		}
		return out
	},
	"hours": func() []int {
		h := make([]int, 24)
		for i := range h {
			h[i] = i
		}
		return h
	},
}

// Templates returns the page templates by file name ("settings.html", …),
// parsed once; each is the layout with that page's "content" and the
// partials (templates/_*.html, e.g. the settings page's "channels").
func Templates() (map[string]*template.Template, error) {
	parseOnce.Do(func() {
		parsed = map[string]*template.Template{}
		names, err := fs.Glob(templateFS, "templates/*.html")
		if err != nil {
			parseErr = err
			return
		}
		for _, n := range names {
			base := n[len("templates/"):]
			if base == "layout.html" || strings.HasPrefix(base, "_") {
				continue
			}
			// Files named _*.html are partials every page may use.
			t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
			if err != nil {
				parseErr = err
				return
			}
			parsed[base] = t
		}
	})
	return parsed, parseErr
}
