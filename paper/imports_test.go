package paper

import (
	"strings"
	"testing"

	"followfeed/internal/golist"
)

// Package paper says what a paper is, not where it is kept: it imports no
// database (package catalog stores papers).
func TestImportsNoDatabase(t *testing.T) {
	for _, imp := range golist.Packages(t, "-f", `{{join .Imports " "}}`, "followfeed/paper") {
		if imp == "followfeed/database" || imp == "followfeed/catalog" || strings.HasPrefix(imp, "github.com/jackc/pgx") {
			t.Errorf("package paper imports %s", imp)
		}
	}
}
