package bench

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Level is a scale the benchmark runs at: its name, its dataset, the
// targets its figures are judged by, and where its dataset lives.
type Level struct {
	Name  string // "S", "M"
	Scale Scale
	// Targets are the figures' targets at this scale.
	Targets Targets
	// DBSuffix is appended to DATABASE_URL's database name to name the
	// database that holds this level's dataset ("" for S: DATABASE_URL's
	// own database).
	DBSuffix string
}

// Targets are the thresholds a level's figures pass or fail by.
type Targets struct {
	Match   time.Duration // the match job of a 5,000-paper batch
	Query   time.Duration // p99 of the user-match query (50 items)
	Render  time.Duration // p99 of a private feed's full render
	Share   float64       // 304s' req/s as a share of a bare net/http handler's
	Digests float64       // digests handed to SMTP per second
	RSS     int64         // peak RSS of `serve` under the feed load, bytes
	// Ranked is the p99 of a ranked feed's full render (a user with a
	// model), Click the p99 of a feedback click to an updated model.
	Ranked, Click time.Duration
	// Inbox is the p99 of the inbox page (GET /inbox, issue 27's).
	Inbox time.Duration
}

// Levels are the scales `followfeed-lab bench --scale` selects from, smallest
// first: S with the targets it has always had, M with issue 18's; the
// ranking's (issue 26's) and the inbox page's (issue 27's) the same at
// both.
var Levels = []Level{
	{Name: "S", Scale: ScaleS, Targets: Targets{Match: 2 * time.Second, Query: 15 * time.Millisecond, Render: 15 * time.Millisecond,
		Share: 0.20, Digests: 300, RSS: 300 << 20, Ranked: 15 * time.Millisecond, Click: 50 * time.Millisecond,
		Inbox: 15 * time.Millisecond}},
	{Name: "M", Scale: ScaleM, DBSuffix: "_m", Targets: Targets{Match: 2 * time.Second, Query: 15 * time.Millisecond, Render: 15 * time.Millisecond,
		Share: 0.30, Digests: 1000, RSS: 300 << 20, Ranked: 15 * time.Millisecond, Click: 50 * time.Millisecond,
		Inbox: 15 * time.Millisecond}},
}

// ParseLevels reads a --scale value: level names separated by commas
// (case-insensitive, e.g. "S", "M", "S,M"). It returns each named level
// once, smallest first, or an error that names the levels there are.
func ParseLevels(spec string) ([]Level, error) {
	var names []string
	for _, l := range Levels {
		names = append(names, l.Name)
	}
	want := map[string]bool{}
	for _, f := range strings.Split(spec, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		if !slices.Contains(names, f) {
			return nil, fmt.Errorf("%q is not a scale: use %s, or several separated by commas", f, strings.Join(names, ", "))
		}
		want[f] = true
	}
	var out []Level
	for _, l := range Levels {
		if want[l.Name] {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scale named: use %s, or several separated by commas", strings.Join(names, ", "))
	}
	return out, nil
}

// DatabaseURL returns the connection URL of l's database: base (a
// postgres:// URL) with l.DBSuffix appended to its database name, on the
// same server with the same user and parameters. base itself is returned
// for a level without a suffix.
func (l Level) DatabaseURL(base string) (string, error) {
	if l.DBSuffix == "" {
		return base, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("scale %s: DATABASE_URL must be a postgres:// URL to name the database beside it (its name with %s appended)", l.Name, l.DBSuffix)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("scale %s: DATABASE_URL names no database (postgres://host/NAME); scale %s's is NAME%s", l.Name, l.Name, l.DBSuffix)
	}
	u.Path, u.RawPath = "/"+name+l.DBSuffix, ""
	return u.String(), nil
}
