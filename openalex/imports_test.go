package openalex

import (
	"strings"
	"testing"

	"followfeed/internal/golist"
)

// The client knows OpenAlex, not followfeed: of followfeed's packages it
// links only the shared leaves (apperr, internal/...), no domain package
// and no database.
func TestImportsNoDomain(t *testing.T) {
	for _, pkg := range golist.Packages(t, "-deps", "followfeed/openalex") {
		if strings.HasPrefix(pkg, "followfeed/") && pkg != "followfeed/openalex" && pkg != "followfeed/apperr" &&
			!strings.HasPrefix(pkg, "followfeed/internal/") || strings.HasPrefix(pkg, "github.com/jackc/pgx") {
			t.Errorf("openalex links %s", pkg)
		}
	}
}
