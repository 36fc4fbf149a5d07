package follow

import (
	"slices"
	"strings"
	"testing"
)

func TestLookupCategory(t *testing.T) {
	cases := []struct {
		id   string
		want CategoryInfo
		ok   bool
	}{
		{"cs.LG", CategoryInfo{ID: "cs.LG", Name: "Machine Learning", Archive: "cs", Group: "cs", Active: true}, true},
		{"CS.lg", CategoryInfo{ID: "cs.LG", Name: "Machine Learning", Archive: "cs", Group: "cs", Active: true}, true},
		{"hep-th", CategoryInfo{ID: "hep-th", Name: "High Energy Physics - Theory", Archive: "hep-th", Group: "physics", Active: true}, true},
		{"math.IT", CategoryInfo{ID: "math.IT", Name: "Information Theory", Archive: "math", Group: "math", Active: true}, true},
		{"astro-ph", CategoryInfo{ID: "astro-ph", Name: "Astrophysics", Archive: "astro-ph", Group: "physics", Active: false}, true},
		{"cmp-lg", CategoryInfo{ID: "cmp-lg", Name: "Computation and Language", Archive: "cmp-lg", Group: "cs", Active: false}, true},
		{"cs", CategoryInfo{}, false},
		{"cs.ZZ", CategoryInfo{}, false},
		{"", CategoryInfo{}, false},
	}
	for _, c := range cases {
		got, ok := LookupCategory(c.id)
		if ok != c.ok || got != c.want {
			t.Errorf("LookupCategory(%q) = %#v, %v; want %#v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestArchiveName(t *testing.T) {
	cases := []struct {
		id, want string
		ok       bool
	}{
		{"cs", "Computer Science", true},
		{"CS", "Computer Science", true},
		{"astro-ph", "Astrophysics", true},
		{"hep-th", "High Energy Physics - Theory", true},
		{"eess", "Electrical Engineering and Systems Science", true},
		{"cmp-lg", "Computation and Language", true},
		{"cs.LG", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := ArchiveName(c.id)
		if ok != c.ok || got != c.want {
			t.Errorf("ArchiveName(%q) = %q, %v; want %q, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestCanonicalCategory(t *testing.T) {
	cases := []struct {
		id, want string
		ok       bool
	}{
		{"cs.LG", "cs.LG", true},
		{"CS.lg", "cs.LG", true},
		{"math.IT", "cs.IT", true},
		{"MATH.it", "cs.IT", true},
		{"math.MP", "math-ph", true},
		{"stat.TH", "math.ST", true},
		{"q-fin.EC", "econ.GN", true},
		{"cs.SY", "eess.SY", true},
		{"cs.NA", "math.NA", true},
		{"cmp-lg", "cs.CL", true},
		{"alg-geom", "math.AG", true},
		{"chao-dyn", "nlin.CD", true},
		{"supr-con", "cond-mat.supr-con", true},
		{"astro-ph", "astro-ph", true},
		{"cond-mat", "cond-mat", true},
		{"q-bio", "q-bio", true},
		{"hep-th", "hep-th", true},
		{"cs", "", false},
		{"cs.ZZ", "", false},
		{"", "", false},
		{"ＣＳ.LG", "", false},
	}
	for _, c := range cases {
		got, ok := CanonicalCategory(c.id)
		if ok != c.ok || got != c.want {
			t.Errorf("CanonicalCategory(%q) = %q, %v; want %q, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

// TestTaxonomyIsConsistent walks the whole embedded taxonomy: every id
// canonicalises to a category that is its own canonical form, every category
// with an active canonical form can be followed, and every active archive
// can be followed, as an archive exactly when it is not an active category.
func TestTaxonomyIsConsistent(t *testing.T) {
	tx, err := parseTaxonomy(taxonomyJSON)
	if err != nil {
		t.Fatalf("parseTaxonomy: %v", err)
	}
	if len(tx.categories) < 150 || len(tx.archives) < 30 {
		t.Fatalf("only %d categories and %d archives", len(tx.categories), len(tx.archives))
	}
	for id := range tx.canonical {
		canonical, ok := CanonicalCategory(id)
		if !ok {
			t.Fatalf("CanonicalCategory(%q) not found", id)
		}
		if again, _ := CanonicalCategory(canonical); again != canonical {
			t.Errorf("CanonicalCategory(%q) = %q, which canonicalises to %q", id, canonical, again)
		}
		if !tx.isActiveCategory(canonical) {
			continue // the bare legacy categories: astro-ph, cond-mat, q-bio
		}
		got, err := ParseTarget("category", id)
		if err != nil || got != (Target{Category, canonical}) || got.IsArchive() {
			t.Errorf("ParseTarget(category, %q) = %v, %v; want category %s", id, got, err, canonical)
		}
	}
	for _, a := range tx.archives {
		if !a.Active {
			continue
		}
		got, err := ParseTarget("category", a.ID)
		if err != nil || got.ID != a.ID {
			t.Errorf("ParseTarget(category, %q) = %v, %v", a.ID, got, err)
		}
		if got.IsArchive() == tx.isActiveCategory(a.ID) {
			t.Errorf("%s: IsArchive() = %v", a.ID, got.IsArchive())
		}
	}
}

// TestFollowsMatchPapers checks that the key of a follow of any category or
// of its archive is among the keys of a paper listed in that category.
func TestFollowsMatchPapers(t *testing.T) {
	for _, c := range loadTaxonomy().categories {
		follow, err := ParseTarget("category", c.ID)
		if err != nil {
			continue // the bare legacy categories are followed as archives, below
		}
		keys := keysOf(CategoryKeys(c.ID, nil))
		if !slices.Contains(keys, follow.Key()) {
			t.Errorf("paper in %s: keys %v lack the follow's key %s", c.ID, keys, follow.Key())
		}
		canonical, _ := LookupCategory(follow.ID)
		archive, err := ParseTarget("category", canonical.Archive)
		if err != nil {
			t.Fatalf("archive of %s: %v", c.ID, err)
		}
		if !slices.Contains(keys, archive.Key()) {
			t.Errorf("paper in %s: keys %v lack %s", c.ID, keys, archive.Key())
		}
	}
	for _, legacy := range []string{"astro-ph", "cond-mat", "q-bio"} {
		follow, err := ParseTarget("category", legacy)
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysOf(CategoryKeys(legacy, nil)); !slices.Contains(keys, follow.Key()) {
			t.Errorf("legacy paper in %s: keys %v lack %s", legacy, keys, follow.Key())
		}
	}
}

func keysOf(ks []CategoryKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Key
	}
	return out
}

func TestCategoryKeys(t *testing.T) {
	p := func(k string) CategoryKey { return CategoryKey{Key: k} }
	x := func(k string) CategoryKey { return CategoryKey{Key: k, Cross: true} }
	cases := []struct {
		name       string
		primary    string
		categories []string
		want       []CategoryKey
	}{
		{"cross-listed", "cs.LG", []string{"cs.LG", "cs.AI", "stat.ML"},
			[]CategoryKey{p("category:cs.LG"), p("archive:cs"), x("archive:stat"), x("category:cs.AI"), x("category:stat.ML")}},
		{"alias primary", "math.IT", []string{"math.IT"},
			[]CategoryKey{p("category:cs.IT"), p("archive:cs"), p("archive:math")}},
		{"alias cross-list", "cs.IT", []string{"cs.IT", "math.IT"},
			[]CategoryKey{p("category:cs.IT"), p("archive:cs"), x("archive:math")}},
		{"archive that is a category", "hep-th", []string{"hep-th"},
			[]CategoryKey{p("category:hep-th"), p("archive:hep-th")}},
		{"legacy bare category", "astro-ph", []string{"astro-ph"},
			[]CategoryKey{p("category:astro-ph"), p("archive:astro-ph")}},
		{"legacy cross-lists", "cond-mat", []string{"cond-mat", "q-bio"},
			[]CategoryKey{p("category:cond-mat"), p("archive:cond-mat"), x("archive:q-bio"), x("category:q-bio")}},
		{"subsumed archive", "cmp-lg", []string{"cmp-lg"},
			[]CategoryKey{p("category:cs.CL"), p("archive:cs")}},
		{"subsumed archive cross-list", "math.DS", []string{"chao-dyn", "solv-int"},
			[]CategoryKey{p("category:math.DS"), p("archive:math"), x("archive:nlin"), x("category:nlin.CD"), x("category:nlin.SI")}},
		{"category alias of archive", "math-ph", []string{"math-ph", "math.MP"},
			[]CategoryKey{p("category:math-ph"), p("archive:math-ph"), x("archive:math")}},
		{"other aliases", "cs.NA", []string{"cs.SY", "q-fin.EC", "stat.TH"},
			[]CategoryKey{p("category:math.NA"), p("archive:math"), p("archive:cs"),
				x("archive:econ"), x("archive:eess"), x("archive:q-fin"), x("archive:stat"),
				x("category:econ.GN"), x("category:eess.SY"), x("category:math.ST")}},
		{"unknown category", "cs.ZZ", []string{"cs.ZZ", "cs.LG"},
			[]CategoryKey{p("category:cs.ZZ"), p("archive:cs"), x("category:cs.LG")}},
		{"unknown category, odd case", "CS.zz", nil,
			[]CategoryKey{p("category:CS.zz"), p("archive:cs")}},
		{"unknown archive", "newarch.AB", []string{"newword"},
			[]CategoryKey{p("category:newarch.AB"), p("archive:newarch"), x("archive:newword"), x("category:newword")}},
		{"odd case, spaces and duplicates", "CS.lg", []string{"cs.LG", "CS.LG", "math.it", "cs.ai", " stat.ML "},
			[]CategoryKey{p("category:cs.LG"), p("archive:cs"), x("archive:math"), x("archive:stat"),
				x("category:cs.AI"), x("category:cs.IT"), x("category:stat.ML")}},
		{"garbage skipped", "cs.LG", []string{"", "  ", "cs LG", "cs.LG;DROP", "a..b", ".cs", "cs.", "cs/LG",
			"cs.ΛG", strings.Repeat("a", 41)},
			[]CategoryKey{p("category:cs.LG"), p("archive:cs")}},
		{"garbage primary", "", []string{"cs.AI"},
			[]CategoryKey{x("archive:cs"), x("category:cs.AI")}},
		{"nothing", "", nil, []CategoryKey{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CategoryKeys(c.primary, c.categories)
			if got == nil || !slices.Equal(got, c.want) {
				t.Errorf("CategoryKeys(%q, %q)\n got %v\nwant %v", c.primary, c.categories, got, c.want)
			}
		})
	}
}

func TestParseTaxonomyRejectsContradictions(t *testing.T) {
	bad := map[string]string{
		"not json": `{`,
		"alias contradicts category": `{"archives":[{"id":"cs","is_active":true}],
			"categories":[{"id":"cs.IT","archive":"cs","canonical_id":"cs.IT"},{"id":"cs.XX","archive":"cs","canonical_id":"cs.XX"}],
			"category_aliases":[{"alias":"cs.XX","canonical":"cs.IT"}]}`,
		"canonical is not a category": `{"archives":[{"id":"cs","is_active":true}],
			"categories":[{"id":"cs.IT","archive":"cs","canonical_id":"cs.YY"}]}`,
		"archive not listed": `{"categories":[{"id":"cs.IT","archive":"cs","canonical_id":"cs.IT"}]}`,
	}
	for name, data := range bad {
		if _, err := parseTaxonomy([]byte(data)); err == nil {
			t.Errorf("%s: parseTaxonomy accepted it", name)
		}
	}
}

// FuzzCategoryKeys checks that CategoryKeys never panics and keeps its
// promises: no duplicates, primary keys first, cross keys sorted.
func FuzzCategoryKeys(f *testing.F) {
	f.Log("hostile: decoders")
	f.Add("cs.LG", "stat.ML")
	f.Add("math.IT", "cs.IT")
	f.Add("cmp-lg", "CS.zz")
	f.Add("", "a..b")
	f.Fuzz(func(t *testing.T, primary, other string) {
		keys := CategoryKeys(primary, []string{other, primary})
		seen := make(map[string]bool)
		var cross []string
		for i, k := range keys {
			if seen[k.Key] {
				t.Fatalf("duplicate key %q in %v", k.Key, keys)
			}
			seen[k.Key] = true
			if !strings.HasPrefix(k.Key, "category:") && !strings.HasPrefix(k.Key, "archive:") {
				t.Fatalf("key %q", k.Key)
			}
			if k.Cross {
				cross = append(cross, k.Key)
			} else if i > 0 && keys[i-1].Cross {
				t.Fatalf("primary key after a cross key in %v", keys)
			}
		}
		if !slices.IsSorted(cross) {
			t.Fatalf("cross keys not sorted: %v", keys)
		}
	})
}

func TestActiveCategories(t *testing.T) {
	cats := ActiveCategories()
	ids := map[string]bool{}
	for _, c := range cats {
		ids[c.ID] = true
		if !c.Active || c.Name == "" {
			t.Errorf("%+v", c)
		}
	}
	if !ids["cs.LG"] || !ids["cs.IT"] || ids["math.IT"] || ids["astro-ph"] || len(cats) < 140 {
		t.Errorf("%d categories; cs.LG %v cs.IT %v math.IT %v", len(cats), ids["cs.LG"], ids["cs.IT"], ids["math.IT"])
	}
}
