package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPIDocument is the OpenAPI 3.1 description of every route, served at
// /openapi.json. Tests validate real responses against it.
//
//go:embed openapi.json
var OpenAPIDocument []byte

// serveOpenAPI serves OpenAPIDocument (GET /openapi.json).
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(OpenAPIDocument)
}
