package paper

import (
	"os/exec"
	"strings"
	"testing"
)

// Package paper says what a paper is, not where it is kept: it imports no
// database (package catalog stores papers).
func TestImportsNoDatabase(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "followfeed/paper").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == "followfeed/database" || imp == "followfeed/catalog" || strings.HasPrefix(imp, "github.com/jackc/pgx") {
			t.Errorf("package paper imports %s", imp)
		}
	}
}
