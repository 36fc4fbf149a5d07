package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// hostileChecks are issue 8's hostile-input and access-control
// requirements, each shown by tests of `make test` (Fuzz targets run their
// seed corpus under testdata/fuzz as tests; make test also fuzzes each for
// 2 s). The scenario reads their outcome from `go test -json`.
var hostileChecks = []struct {
	name  string
	tests []string
}{
	{"every decoder fuzzed: OAI-PMH XML, OpenAlex JSON, ingest JSON/NDJSON, JWTs, email links, feed parameters, cursors, follow ids, whole requests",
		[]string{"FuzzParseListRecords", "FuzzParseWorks", "FuzzDecodePush", "FuzzVerify", "TestFuzzSeedsReachAcceptance", "FuzzLinkVerify",
			"FuzzParseLimit", "FuzzWellFormed", "FuzzRender", "FuzzDecodeCursor", "FuzzParseTarget", "FuzzCategoryKeys", "FuzzRequests"}},
	{"200 malformed ingest bodies and 200 malformed OAI-PMH pages (truncation, entities, billion laughs, huge attributes, bad UTF-8) write nothing",
		[]string{"TestTwoHundredMalformedInputsNeverPanicOrWrite", "TestTwoHundredMalformedOAIPagesNeverWrite", "TestParseListRecordsSizeCaps",
			"TestHarvestStopsOnARepeatedResumptionToken"}},
	{"limits: bodies, headers, slowloris, follow count, page sizes, batch sizes, rate limits, outbound timeouts and size caps",
		[]string{"TestSlowClientsAndOversizedRequests", "TestDecodePushLimits", "TestFollowLimitOverHTTP", "TestRateLimits", "TestPerUserRateLimit",
			"TestBodyCap", "TestTimeout", "TestOAIListRecordsContextAndBodyCap"}},
	{"access control: no user reads or changes another's follows, settings, feeds, digests or unsubscribe state; service and user tokens kept apart; admin UI needs its credential",
		[]string{"TestAccessControl", "TestRotationAndTokenSecrecy", "TestOperationsEndpoints"}},
	{"no user-supplied URL is fetched (SSRF)", []string{"TestNoUserSuppliedURLIsFetched"}},
	{"secrets never reach logs or error responses", []string{"TestSecretsNeverReachLogsOrResponses"}},
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// runHostile turns the `go test -json` results in Options.TestResults into
// verdicts; it runs nothing itself (the binary has no sources).
func runHostile(_ context.Context, e *env, res *Result) error {
	res.What = "The hostile-input and access-control requirements are ordinary tests of `make test`; `make soak` runs the whole " +
		"suite once more (`go test -json -count=1 ./...`) and this section reports the tests behind each requirement. " +
		"A requirement passes when every one of its tests ran and passed."
	if e.opts.TestResults == "" {
		return errors.New("no `go test -json` results given (--tests FILE); `make soak` runs the tests and passes them")
	}
	f, err := os.Open(e.opts.TestResults)
	if err != nil {
		return err
	}
	defer f.Close()
	type outcome struct {
		pkg, action string
		elapsed     float64
	}
	got := map[string]outcome{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			got[ev.Test] = outcome{strings.TrimPrefix(ev.Package, "followfeed/"), ev.Action, ev.Elapsed}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", e.opts.TestResults, err)
	}
	passed, total := 0, 0
	for _, c := range hostileChecks {
		ok := true
		var parts []string
		for _, name := range c.tests {
			total++
			o, ran := got[name]
			switch {
			case !ran:
				ok = false
				parts = append(parts, name+" did not run")
			case o.action != "pass":
				ok = false
				parts = append(parts, fmt.Sprintf("%s (%s) %s", name, o.pkg, strings.ToUpper(o.action)))
			default:
				passed++
				parts = append(parts, fmt.Sprintf("%s (%s, %s)", name, o.pkg, (time.Duration(o.elapsed*1000)*time.Millisecond).String()))
			}
		}
		res.check(c.name, ok, "%s", strings.Join(parts, "; "))
	}
	res.figure("tests behind the requirements", "%d of %d passed", passed, total)
	res.figure("results read from", "%s", e.opts.TestResults)
	res.Summary = fmt.Sprintf("%d requirements, %d/%d tests passed", len(hostileChecks), passed, total)
	return nil
}
