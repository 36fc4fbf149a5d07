package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// requirements are issue 8's hostile-input and access-control requirements
// (and issue 15's security findings),
// each shown by tests of `make test` (Fuzz targets run their seed corpus
// under testdata/fuzz as tests; make test also fuzzes each for 2 s).
//
// A test says which requirement it shows by logging one line first thing,
// before anything that could skip it:
//
//	t.Log("hostile: limits")
//
// (f.Log in a Fuzz target). `go test -json` reports that line as the
// test's output, and the hostile-input scenario reads the mapping from
// there: a new hostile test needs its tag, not an edit of the soak.
var requirements = []requirement{
	{"decoders", "every decoder fuzzed: OAI-PMH XML, OpenAlex JSON, ingest JSON/NDJSON, JWTs, email links, feed parameters, cursors, follow ids, whole requests"},
	{"malformed", "200 malformed ingest bodies and 200 malformed OAI-PMH pages (truncation, entities, billion laughs, huge attributes, bad UTF-8) write nothing"},
	{"limits", "limits: bodies, headers, slowloris, follow count, page sizes, batch sizes, rate limits, outbound timeouts and size caps"},
	{"access", "access control: no user reads or changes another's follows, settings, feeds, digests or unsubscribe state; service and user tokens kept apart; admin UI needs its credential"},
	{"ssrf", "no user-supplied URL is fetched (SSRF)"},
	{"leaks", "no internal detail is public: a source's last_error on /v1/status is a fixed sentence for the kind of failure (SQL errors, host names and upstream bodies stay in the log), a 500 says only \"internal error\""},
	{"secrets", "secrets never reach logs or error responses, and channel credentials (webhook signing secrets, Matrix access tokens, Slack and Discord URLs) are stored sealed under SECRET_KEY, bound to their owner, never in clear, and never in a failed delivery's text (ledger, deliveries, disabled reason, mail, job errors, logs)"},
	{"tokens", "JWTs (issue 15): typ checked when present, lifetime capped, numeric dates only, one algorithm family per RSA key without alg, printable subjects, the demo page's own development key"},
	{"production-config", "production refuses the published development secrets, SECRET_KEY equal to AUTH_HS256_SECRET, JWKS or PEM keys without AUTH_AUDIENCE and AUTH_ISSUER, and a JWKS over plain http"},
	{"names", "names and labels users and hosts give (follow labels, the registry's names, pushed titles and authors) are stored on one line, without bidirectional controls or line separators (issue 28)"},
	{"csrf", "cross-site requests: login CSRF (POST /login origin check, a confirm page for foreign sign-in links), the job UI's cross-origin writes and framing, CORS preflights from other origins"},
	{"markup", "a paper's text (title, authors, abstract, URLs) makes no markup of its own in chat messages: no Slack mention, link or command, no Discord formatting, masked link or mention"},
}

// requirement is one hostile-input requirement: ID is the tag tests log
// ("hostile: " + ID), Text what the report says it means.
type requirement struct {
	ID, Text string
}

// hostileTag matches a requirement tag in a test's output line, as
// t.Log("hostile: limits") writes it ("    x_test.go:12: hostile: limits").
var hostileTag = regexp.MustCompile(`(?:^|: )hostile: ([a-z0-9-]+)\s*$`)

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// runHostile turns the `go test -json` results in Options.TestResults into
// verdicts; it runs nothing itself (the binary has no sources).
func runHostile(_ context.Context, e *env, res *Result) error {
	res.What = "The hostile-input and access-control requirements are ordinary tests of `make test`; `make soak` runs the whole " +
		"suite once more (`go test -json -count=1 ./...`) and this section reports the tests behind each requirement: those that log " +
		"`hostile: <requirement>` (`t.Log(\"hostile: limits\")`). " +
		"A requirement passes when it has tests and every one of them passed."
	if e.opts.TestResults == "" {
		return errors.New("no `go test -json` results given (--tests FILE); `make soak` runs the tests and passes them")
	}
	f, err := os.Open(e.opts.TestResults)
	if err != nil {
		return err
	}
	defer f.Close()
	type testID struct{ pkg, name string }
	type outcome struct {
		action  string
		elapsed float64
	}
	got := map[testID]outcome{}
	tagged := map[string][]testID{} // requirement → tests, in the order their tags appeared
	seen := map[testID]map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		id := testID{strings.TrimPrefix(ev.Package, "followfeed/"), ev.Test}
		switch ev.Action {
		case "output":
			m := hostileTag.FindStringSubmatch(ev.Output)
			if m == nil || seen[id][m[1]] {
				continue
			}
			if seen[id] == nil {
				seen[id] = map[string]bool{}
			}
			seen[id][m[1]] = true
			tagged[m[1]] = append(tagged[m[1]], id)
		case "pass", "fail", "skip":
			got[id] = outcome{ev.Action, ev.Elapsed}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", e.opts.TestResults, err)
	}
	passed, total := 0, 0
	for _, r := range requirements {
		tests := tagged[r.ID]
		slices.SortFunc(tests, func(a, b testID) int { return strings.Compare(a.pkg+"."+a.name, b.pkg+"."+b.name) })
		ok := len(tests) > 0
		var parts []string
		if !ok {
			parts = append(parts, fmt.Sprintf("no test logged \"hostile: %s\"", r.ID))
		}
		for _, id := range tests {
			total++
			o, ran := got[id]
			switch {
			case !ran:
				ok = false
				parts = append(parts, id.name+" did not finish")
			case o.action != "pass":
				ok = false
				parts = append(parts, fmt.Sprintf("%s (%s) %s", id.name, id.pkg, strings.ToUpper(o.action)))
			default:
				passed++
				parts = append(parts, fmt.Sprintf("%s (%s, %s)", id.name, id.pkg, (time.Duration(o.elapsed*1000)*time.Millisecond).String()))
			}
		}
		res.check(r.Text, ok, "%s", strings.Join(parts, "; "))
	}
	// A tag no requirement knows is a typo that would hide a test.
	var unknown []string
	for tag, tests := range tagged {
		if !slices.ContainsFunc(requirements, func(r requirement) bool { return r.ID == tag }) {
			for _, id := range tests {
				unknown = append(unknown, fmt.Sprintf("%s (%s): %q", id.name, id.pkg, tag))
			}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		res.check("every hostile tag names a requirement", false, "unknown tags: %s", strings.Join(unknown, "; "))
	}
	res.figure("tests behind the requirements", "%d of %d passed", passed, total)
	res.figure("results read from", "%s", e.opts.TestResults)
	res.Summary = fmt.Sprintf("%d requirements, %d/%d tests passed", len(requirements), passed, total)
	return nil
}
