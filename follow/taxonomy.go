package follow

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// taxonomyJSON is arXiv's category taxonomy (see its "source" field).
//
//go:embed taxonomy.json
var taxonomyJSON []byte

// CategoryInfo describes one arXiv category as the taxonomy lists it.
type CategoryInfo struct {
	ID      string // as arXiv spells it: "cs.LG", "hep-th", "math.IT"
	Name    string // "Machine Learning"
	Archive string // the archive it belongs to: "cs", "hep-th", "math"
	Group   string // the group id: "cs", "physics", "math", ...
	Active  bool   // false for retired ids such as "cmp-lg" or the bare "astro-ph"
}

// CategoryKey is one match key of a paper's categories. Cross is true when
// only the paper's cross-lists (not its primary category) produced the key.
type CategoryKey struct {
	Key   string
	Cross bool
}

// maxPaperCategoryLength bounds what CategoryKeys treats as a category.
const maxPaperCategoryLength = 40

type archiveInfo struct {
	ID     string
	Name   string
	Active bool
}

// taxonomy is the parsed taxonomy.json. Every map is keyed by the ASCII
// lower-case form of the id, so lookups ignore case.
type taxonomy struct {
	categories map[string]CategoryInfo
	archives   map[string]archiveInfo
	// canonical maps every known category id, alias and subsumed archive
	// name to the canonical category id.
	canonical map[string]string
}

type taxonomyFile struct {
	Archives []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		IsActive bool   `json:"is_active"`
	} `json:"archives"`
	Categories []struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Archive     string `json:"archive"`
		Group       string `json:"group"`
		IsActive    bool   `json:"is_active"`
		CanonicalID string `json:"canonical_id"`
	} `json:"categories"`
	CategoryAliases []struct {
		Alias     string `json:"alias"`
		Canonical string `json:"canonical"`
	} `json:"category_aliases"`
	ArchivesSubsumed []struct {
		Archive  string `json:"archive"`
		Category string `json:"category"`
	} `json:"archives_subsumed"`
}

// loadTaxonomy parses the embedded taxonomy once, on first use. The data is
// compiled in and checked by the tests, so a failure is a build defect and
// panics.
var loadTaxonomy = sync.OnceValue(func() *taxonomy {
	tx, err := parseTaxonomy(taxonomyJSON)
	if err != nil {
		panic("follow: embedded taxonomy.json: " + err.Error())
	}
	return tx
})

func parseTaxonomy(data []byte) (*taxonomy, error) {
	var f taxonomyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	tx := &taxonomy{
		categories: make(map[string]CategoryInfo, len(f.Categories)),
		archives:   make(map[string]archiveInfo, len(f.Archives)),
		canonical:  make(map[string]string, len(f.Categories)+len(f.ArchivesSubsumed)),
	}
	for _, a := range f.Archives {
		tx.archives[lowerASCII(a.ID)] = archiveInfo{ID: a.ID, Name: a.Name, Active: a.IsActive}
	}
	for _, c := range f.Categories {
		tx.categories[lowerASCII(c.ID)] = CategoryInfo{ID: c.ID, Name: c.Name, Archive: c.Archive, Group: c.Group, Active: c.IsActive}
		canonical := c.CanonicalID
		if canonical == "" {
			canonical = c.ID
		}
		tx.canonical[lowerASCII(c.ID)] = canonical
	}
	for _, a := range f.CategoryAliases {
		if err := tx.addCanonical(a.Alias, a.Canonical); err != nil {
			return nil, err
		}
	}
	for _, s := range f.ArchivesSubsumed {
		if err := tx.addCanonical(s.Archive, s.Category); err != nil {
			return nil, err
		}
	}
	return tx, tx.check()
}

// addCanonical records that id stands for canonical, refusing to contradict
// what the category list already says.
func (tx *taxonomy) addCanonical(id, canonical string) error {
	key := lowerASCII(id)
	if old, ok := tx.canonical[key]; ok && old != canonical {
		return fmt.Errorf("%s is canonically %s in categories but %s elsewhere", id, old, canonical)
	}
	tx.canonical[key] = canonical
	return nil
}

// check verifies that every canonical id is a category that is its own
// canonical form and that every category's archive is listed.
func (tx *taxonomy) check() error {
	for id, canonical := range tx.canonical {
		c, ok := tx.categories[lowerASCII(canonical)]
		if !ok || c.ID != canonical || tx.canonical[lowerASCII(canonical)] != canonical {
			return fmt.Errorf("%s: canonical id %s is not a canonical category", id, canonical)
		}
	}
	for _, c := range tx.categories {
		if _, ok := tx.archives[lowerASCII(c.Archive)]; !ok {
			return fmt.Errorf("%s: archive %s is not listed", c.ID, c.Archive)
		}
	}
	return nil
}

// category returns the category spelled id, ignoring case.
func (tx *taxonomy) category(id string) (CategoryInfo, bool) {
	c, ok := tx.categories[lowerASCII(id)]
	return c, ok
}

// archive returns the archive spelled id, ignoring case.
func (tx *taxonomy) archive(id string) (archiveInfo, bool) {
	a, ok := tx.archives[lowerASCII(id)]
	return a, ok
}

// isActiveCategory reports whether id (exact spelling) is an active category.
func (tx *taxonomy) isActiveCategory(id string) bool {
	c, ok := tx.category(id)
	return ok && c.ID == id && c.Active
}

// isArchiveFollow reports whether id (exact spelling) is an active archive
// that is not also an active category, i.e. a whole-archive follow.
func (tx *taxonomy) isArchiveFollow(id string) bool {
	a, ok := tx.archive(id)
	return ok && a.ID == id && a.Active && !tx.isActiveCategory(id)
}

// LookupCategory returns the taxonomy's entry for the category id, ignoring
// case. Aliases and retired ids ("math.IT", "cmp-lg", "astro-ph") return
// their own entry, not the canonical one: call CanonicalCategory first for
// that. Archive ids that are not categories ("cs") are not found.
func LookupCategory(id string) (CategoryInfo, bool) {
	return loadTaxonomy().category(id)
}

// ActiveCategories returns every active canonical category (aliases such as
// math.IT left out), sorted by id.
func ActiveCategories() []CategoryInfo {
	tx := loadTaxonomy()
	var out []CategoryInfo
	for _, c := range tx.categories {
		if c.Active && tx.canonical[lowerASCII(c.ID)] == c.ID {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b CategoryInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ArchiveName returns the name of the archive id, ignoring case
// ("cs" -> "Computer Science"). Retired archives ("cmp-lg") are found too.
func ArchiveName(id string) (string, bool) {
	a, ok := loadTaxonomy().archive(id)
	return a.Name, ok
}

// CanonicalCategory returns the canonical category id for any category id,
// alias or subsumed legacy archive name the taxonomy knows, ignoring case:
// "CS.lg" -> "cs.LG", "math.IT" -> "cs.IT", "cmp-lg" -> "cs.CL",
// "astro-ph" -> "astro-ph". The result is always its own canonical form. It
// returns ("", false) for anything else, including archive ids that are not
// categories ("cs").
func CanonicalCategory(id string) (string, bool) {
	c, ok := loadTaxonomy().canonical[lowerASCII(id)]
	return c, ok
}

// CategoryKeys returns the match keys of a paper whose primary category is
// primary and whose categories are categories (which may repeat the primary,
// hold duplicates, aliases, legacy or unknown ids, in any case).
//
// Each known category gives "category:<canonical>" and "archive:<its
// archive>"; an alias (math.IT) also gives the archive of the alias itself
// ("archive:math"), since arXiv lists such papers in both archives. An
// unknown but well-formed category gives "category:<as given>" and
// "archive:<part before the first dot>"; malformed ones (empty, over 40
// bytes, characters outside [A-Za-z0-9.-], empty dot-separated parts) give
// nothing.
//
// The result has no duplicates. The primary's keys come first, with Cross
// false; then the keys only other categories produce, sorted, with Cross
// true. It is never nil.
func CategoryKeys(primary string, categories []string) []CategoryKey {
	tx := loadTaxonomy()
	seen := make(map[string]bool)
	out := make([]CategoryKey, 0, 2+2*len(categories))
	for _, k := range tx.paperCategoryKeys(primary) {
		if !seen[k] {
			seen[k] = true
			out = append(out, CategoryKey{Key: k})
		}
	}
	var cross []string
	for _, c := range categories {
		for _, k := range tx.paperCategoryKeys(c) {
			if !seen[k] {
				seen[k] = true
				cross = append(cross, k)
			}
		}
	}
	slices.Sort(cross)
	for _, k := range cross {
		out = append(out, CategoryKey{Key: k, Cross: true})
	}
	return out
}

// paperCategoryKeys returns the keys of one paper category, possibly with
// duplicates.
func (tx *taxonomy) paperCategoryKeys(raw string) []string {
	raw = strings.TrimSpace(raw)
	if !wellFormedCategory(raw) {
		return nil
	}
	canonical, ok := tx.canonical[lowerASCII(raw)]
	if !ok {
		return []string{"category:" + raw, "archive:" + tx.archiveOfUnknown(raw)}
	}
	c, _ := tx.category(canonical)
	keys := []string{"category:" + canonical, "archive:" + c.Archive}
	if own, ok := tx.category(raw); ok && own.Active && own.ID != canonical {
		keys = append(keys, "archive:"+own.Archive)
	}
	return keys
}

// archiveOfUnknown returns the part of an unknown category before the first
// dot, spelled as the taxonomy spells it when it names a known archive.
func (tx *taxonomy) archiveOfUnknown(raw string) string {
	prefix, _, _ := strings.Cut(raw, ".")
	if a, ok := tx.archive(prefix); ok {
		return a.ID
	}
	return prefix
}

// wellFormedCategory reports whether s could be an arXiv category id: 1 to
// 40 bytes of [A-Za-z0-9.-], with no empty dot-separated part.
func wellFormedCategory(s string) bool {
	if s == "" || len(s) > maxPaperCategoryLength {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" {
			return false
		}
		for _, r := range part {
			if !isASCIIAlnum(r) && r != '-' {
				return false
			}
		}
	}
	return true
}

func isASCIIAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// lowerASCII lower-cases A-Z only, so that no non-ASCII input can fold onto
// an ASCII id (as "K", the Kelvin sign, would with strings.ToLower).
func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}
