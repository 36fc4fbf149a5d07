package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRouteTablesAreTheDocumentedOperations: every route of the route
// tables is an operation of openapi.json, and every operation there is a
// route, so no route is added, dropped or renamed without its document.
// A route of every method (the job UI's subtree) counts as the methods it
// does not refuse with a 405.
func TestRouteTablesAreTheDocumentedOperations(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" && method != "summary" && method != "description" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, to := range tableOperations(t) {
		if to.method == http.MethodHead {
			continue // a GET route's HEAD; the spec documents the GET
		}
		op := to.method + " " + specPath(to.path, doc.Paths)
		if served[op] {
			t.Errorf("%s is in the tables twice", op)
		}
		served[op] = true
		if !documented[op] {
			t.Errorf("%s (route %q) is not an operation of openapi.json", op, to.route.pattern)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("openapi.json documents %s, which no route table serves", op)
		}
	}
	if len(served) < 60 {
		t.Errorf("only %d operations served: the tables were not all read", len(served))
	}
}

// tableOperation is one method of one route of the tables.
type tableOperation struct {
	route        route
	method, path string
}

// tableOperations is every method of every route of every table, the job
// UI's and the fediverse's (ACTIVITYPUB=on) included (with an empty
// Product: its handlers must not run). A
// route of every method counts as the methods it does not refuse with a
// 405; one that refuses none is an error of the test.
func tableOperations(t *testing.T) []tableOperation {
	t.Helper()
	o := Options{Registry: prometheus.NewRegistry(), Admin: http.NotFoundHandler(), AdminUser: "admin", AdminPassword: "a password"}
	var out []tableOperation
	for _, rt := range append(adminRoutes(o), (&Product{Fediverse: &ActivityPubRoutes{}}).routes()...) {
		method, path, ok := strings.Cut(rt.pattern, " ")
		methods := []string{method}
		if !ok {
			path = rt.pattern
			w := httptest.NewRecorder()
			rt.handler.ServeHTTP(w, httptest.NewRequest(http.MethodTrace, path, nil))
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
				t.Errorf("%s serves every method (TRACE: %d, Allow %q); the spec cannot say which", rt.pattern, w.Code, w.Header().Get("Allow"))
				continue
			}
			methods = strings.Split(w.Header().Get("Allow"), ", ")
		}
		for _, m := range methods {
			out = append(out, tableOperation{route: rt, method: m, path: path})
		}
	}
	return out
}

// specPath is a mux path as openapi.json writes it: "/{$}" is "/", and a
// subtree ("/admin/jobs/") is its one documented path below it
// ("/admin/jobs/{page}").
func specPath(path string, paths map[string]map[string]json.RawMessage) string {
	path = strings.TrimSuffix(path, "{$}")
	if path == "/" || !strings.HasSuffix(path, "/") {
		return path
	}
	below := regexp.MustCompile("^" + regexp.QuoteMeta(path) + `\{[^/}]+\}$`)
	var found []string
	for p := range paths {
		if below.MatchString(p) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return path + " (documented as " + strings.Join(slices.Sorted(slices.Values(found)), ", ") + ")"
	}
	return found[0]
}

// TestEveryBodyTakingRouteAnswers413: every route of every table whose
// method can carry a body (POST, PUT, PATCH; a route of every method
// counts as the methods it serves) answers a body whose Content-Length is
// over its cap with 413 and a problem document, before anything else of
// the route runs (the handlers of the empty Product here would crash) and
// without reading a byte; openapi.json documents that 413.
func TestEveryBodyTakingRouteAnswers413(t *testing.T) {
	t.Log("hostile: limits")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, to := range tableOperations(t) {
		m, path := to.method, to.path
		if m != http.MethodPost && m != http.MethodPut && m != http.MethodPatch {
			continue
		}
		checked++
		r := httptest.NewRequest(m, strings.ReplaceAll(path, "{$}", ""), unreadable{t, to.route.pattern})
		r.ContentLength = 1 << 40
		w := httptest.NewRecorder()
		to.route.handler.ServeHTTP(w, r)
		var p Problem
		if w.Code != http.StatusRequestEntityTooLarge || w.Header().Get("Content-Type") != "application/problem+json" ||
			json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Status != 413 || !strings.Contains(p.Detail, "the request body exceeds ") {
			t.Errorf("%s %s with a 1 TiB body: %d %s %s", m, path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		var op struct {
			Responses map[string]json.RawMessage `json:"responses"`
		}
		_ = json.Unmarshal(doc.Paths[specPath(path, doc.Paths)][strings.ToLower(m)], &op)
		if _, ok := op.Responses["413"]; !ok {
			t.Errorf("openapi.json does not document the 413 of %s %s", m, path)
		}
	}
	if checked < 25 {
		t.Errorf("only %d body-taking operations checked: the tables were not all read", checked)
	}
}

// unreadable is a request body that fails the test when read.
type unreadable struct {
	t       *testing.T
	pattern string
}

func (u unreadable) Read([]byte) (int, error) {
	u.t.Errorf("%s read the body of a request over its cap", u.pattern)
	return 0, io.EOF
}
