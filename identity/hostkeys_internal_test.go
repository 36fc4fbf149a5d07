package identity

import (
	"slices"
	"testing"

	"followfeed/follow"
)

// TestHostKeysToMarkLeavesWhatIsSoAlready: of a host's records, the keys
// to probe and mark are the known keys that are not the host's yet, or
// whose record brings a new name or other names; a key written now
// (inserted with its names) and a key the host registered with the same
// name are left out.
func TestHostKeysToMarkLeavesWhatIsSoAlready(t *testing.T) {
	records := []Record{
		{Kind: follow.Researcher, IDs: []string{"host:1", "s2:1", "s2:2"}, Name: "Alice"},
		{Kind: follow.Researcher, IDs: []string{"host:2", "s2:3"}},
		{Kind: follow.Researcher, IDs: []string{"host:3"}, Name: "Carol", OtherNames: []string{"C. Doe"}},
	}
	names, err := hostNamesOf(records)
	if err != nil {
		t.Fatal(err)
	}
	written := []*group{{newKeys: []string{"researcher:s2:2"}}}
	known := []*stored{
		{hostNames: map[string]string{"researcher:host:1": "Alice", "researcher:host:2": "Bob"}},
		{hostNames: map[string]string{"researcher:s2:3": "", "researcher:host:3": "Carol", "researcher:s2:1": "Alicia"}},
	}
	keys, ns, others := hostKeysToMark(records, names, written, known)
	want := []string{
		"researcher:s2:1",   // the host's under another name
		"researcher:host:3", // same name, new other names
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys to mark %v, want %v (host:1 and host:2 are so already: same name, or none sent; s2:2 was inserted; s2:3 has no name sent)", keys, want)
	}
	if ns[0] != "Alice" || others[1] != `["C. Doe"]` {
		t.Errorf("names %q, others %q", ns, others)
	}
	// A key known but not as the host's is marked, with or without a
	// name sent.
	keys, _, _ = hostKeysToMark(records[:2], names, nil, []*stored{{}})
	if want := []string{"researcher:host:1", "researcher:s2:1", "researcher:s2:2", "researcher:host:2", "researcher:s2:3"}; !slices.Equal(keys, want) {
		t.Errorf("keys not yet the host's: %v, want %v", keys, want)
	}
}
