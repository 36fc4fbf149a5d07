package httpapi

import (
	"encoding/json"
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
	// Every table, the job UI's included.
	o := Options{Registry: prometheus.NewRegistry(), Admin: http.NotFoundHandler(), AdminUser: "admin", AdminPassword: "a password"}
	routes := append(adminRoutes(o), (&Product{}).routes()...)
	served := map[string]bool{}
	for _, rt := range routes {
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
		path = specPath(path, doc.Paths)
		for _, m := range methods {
			if m == http.MethodHead {
				continue // a GET route's HEAD; the spec documents the GET
			}
			op := m + " " + path
			if served[op] {
				t.Errorf("%s is in the tables twice", op)
			}
			served[op] = true
			if !documented[op] {
				t.Errorf("%s (route %q) is not an operation of openapi.json", op, rt.pattern)
			}
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
