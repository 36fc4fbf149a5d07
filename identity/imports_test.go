package identity_test

import (
	"testing"

	"followfeed/internal/golist"
)

// The registry takes what OpenAlex says in OpenAlex's own types (package
// openalex): nothing it links is a harvester.
func TestImportsNoHarvester(t *testing.T) {
	for _, pkg := range golist.Packages(t, "-deps", "followfeed/identity") {
		if pkg == "followfeed/harvest" {
			t.Errorf("identity links %s", pkg)
		}
	}
}
