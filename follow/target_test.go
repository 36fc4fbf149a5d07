package follow

import (
	"strings"
	"testing"

	"followfeed/apperr"
)

func TestParseTargetAccepts(t *testing.T) {
	cases := []struct {
		kind, id string
		want     Target
		key      string
	}{
		// OpenAlex authors: prefix or link, any case of prefix and letter.
		{"researcher", "openalex:A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "openalex:a5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "OpenAlex:A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "https://openalex.org/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "https://openalex.org/authors/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "https://api.openalex.org/authors/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "http://openalex.org/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "http://openalex.org/authors/a5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "http://api.openalex.org/authors/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "HTTPS://OpenAlex.org/A5023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		{"researcher", "openalex:A0005023888391", Target{Researcher, "openalex:A5023888391"}, "researcher:openalex:A5023888391"},
		// ORCID: checksum verified, dashed or not, X upper-cased, links.
		{"researcher", "orcid:0000-0002-1825-0097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "ORCID:0000-0002-1825-0097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "orcid:0000000218250097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "https://orcid.org/0000-0002-1825-0097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "http://orcid.org/0000-0002-1825-0097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "0000-0002-1825-0097", Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher:orcid:0000-0002-1825-0097"},
		{"researcher", "orcid:0000-0001-5109-3700", Target{Researcher, "orcid:0000-0001-5109-3700"}, "researcher:orcid:0000-0001-5109-3700"},
		{"researcher", "orcid:0000-0002-1694-233X", Target{Researcher, "orcid:0000-0002-1694-233X"}, "researcher:orcid:0000-0002-1694-233X"},
		{"researcher", "orcid:0000-0002-1694-233x", Target{Researcher, "orcid:0000-0002-1694-233X"}, "researcher:orcid:0000-0002-1694-233X"},
		{"researcher", "https://orcid.org/000000021694233x", Target{Researcher, "orcid:0000-0002-1694-233X"}, "researcher:orcid:0000-0002-1694-233X"},
		// Semantic Scholar and host ids; a bare number is a host id.
		{"researcher", "s2:1741101", Target{Researcher, "s2:1741101"}, "researcher:s2:1741101"},
		{"researcher", "S2:001741101", Target{Researcher, "s2:1741101"}, "researcher:s2:1741101"},
		{"researcher", "host:1955166", Target{Researcher, "host:1955166"}, "researcher:host:1955166"},
		{"researcher", "HOST:1955166", Target{Researcher, "host:1955166"}, "researcher:host:1955166"},
		{"researcher", "1955166", Target{Researcher, "host:1955166"}, "researcher:host:1955166"},
		{"researcher", "0000000218250097", Target{Researcher, "host:218250097"}, "researcher:host:218250097"},
		{" Researcher ", " \t1955166\n", Target{Researcher, "host:1955166"}, "researcher:host:1955166"},
		// dblp person ids: numeric (leading zeros kept), legacy name-based
		// (case kept), a disambiguation suffix, dblp.org/pid/ links.
		{"researcher", "dblp:46/5782", Target{Researcher, "dblp:46/5782"}, "researcher:dblp:46/5782"},
		{"researcher", "DBLP:04/8414", Target{Researcher, "dblp:04/8414"}, "researcher:dblp:04/8414"},
		{"researcher", "dblp:331/0100", Target{Researcher, "dblp:331/0100"}, "researcher:dblp:331/0100"},
		{"researcher", "dblp:177/9741-2", Target{Researcher, "dblp:177/9741-2"}, "researcher:dblp:177/9741-2"},
		{"researcher", "dblp:w/MingzhiWen", Target{Researcher, "dblp:w/MingzhiWen"}, "researcher:dblp:w/MingzhiWen"},
		{"researcher", "dblp:m/AndrewMcCallum", Target{Researcher, "dblp:m/AndrewMcCallum"}, "researcher:dblp:m/AndrewMcCallum"},
		{"researcher", "dblp:g/JimGray-1", Target{Researcher, "dblp:g/JimGray-1"}, "researcher:dblp:g/JimGray-1"},
		{"researcher", "https://dblp.org/pid/135/8227-1.html", Target{Researcher, "dblp:135/8227-1"}, "researcher:dblp:135/8227-1"},
		{"researcher", "https://dblp.org/pid/46/5782", Target{Researcher, "dblp:46/5782"}, "researcher:dblp:46/5782"},
		{"researcher", "http://dblp.uni-trier.de/pid/c/MSheelaghTCarpendale.xml", Target{Researcher, "dblp:c/MSheelaghTCarpendale"}, "researcher:dblp:c/MSheelaghTCarpendale"},

		// Categories: case-insensitive, canonicalised.
		{"category", "cs.LG", Target{Category, "cs.LG"}, "category:cs.LG"},
		{"category", "CS.lg", Target{Category, "cs.LG"}, "category:cs.LG"},
		{"CATEGORY", "  cs.lg ", Target{Category, "cs.LG"}, "category:cs.LG"},
		{"category", "cond-mat.mtrl-sci", Target{Category, "cond-mat.mtrl-sci"}, "category:cond-mat.mtrl-sci"},
		{"category", "math.IT", Target{Category, "cs.IT"}, "category:cs.IT"},
		{"category", "math.MP", Target{Category, "math-ph"}, "category:math-ph"},
		{"category", "stat.TH", Target{Category, "math.ST"}, "category:math.ST"},
		{"category", "q-fin.EC", Target{Category, "econ.GN"}, "category:econ.GN"},
		{"category", "cs.SY", Target{Category, "eess.SY"}, "category:eess.SY"},
		{"category", "cs.NA", Target{Category, "math.NA"}, "category:math.NA"},
		// Subsumed legacy archives map to the category that took them over.
		{"category", "cmp-lg", Target{Category, "cs.CL"}, "category:cs.CL"},
		{"category", "CMP-LG", Target{Category, "cs.CL"}, "category:cs.CL"},
		{"category", "alg-geom", Target{Category, "math.AG"}, "category:math.AG"},
		{"category", "chao-dyn", Target{Category, "nlin.CD"}, "category:nlin.CD"},
		{"category", "mtrl-th", Target{Category, "cond-mat.mtrl-sci"}, "category:cond-mat.mtrl-sci"},
		{"category", "bayes-an", Target{Category, "physics.data-an"}, "category:physics.data-an"},
		// Archives that are not themselves active categories: whole-archive follows.
		{"category", "cs", Target{Category, "cs"}, "archive:cs"},
		{"category", "CS", Target{Category, "cs"}, "archive:cs"},
		{"category", "math", Target{Category, "math"}, "archive:math"},
		{"category", "astro-ph", Target{Category, "astro-ph"}, "archive:astro-ph"},
		{"category", "cond-mat", Target{Category, "cond-mat"}, "archive:cond-mat"},
		{"category", "physics", Target{Category, "physics"}, "archive:physics"},
		{"category", "q-bio", Target{Category, "q-bio"}, "archive:q-bio"},
		{"category", "q-fin", Target{Category, "q-fin"}, "archive:q-fin"},
		{"category", "stat", Target{Category, "stat"}, "archive:stat"},
		{"category", "eess", Target{Category, "eess"}, "archive:eess"},
		{"category", "econ", Target{Category, "econ"}, "archive:econ"},
		{"category", "nlin", Target{Category, "nlin"}, "archive:nlin"},
		// Archives that are also active categories: category follows.
		{"category", "hep-th", Target{Category, "hep-th"}, "category:hep-th"},
		{"category", "gr-qc", Target{Category, "gr-qc"}, "category:gr-qc"},
		{"category", "quant-ph", Target{Category, "quant-ph"}, "category:quant-ph"},
		{"category", "math-ph", Target{Category, "math-ph"}, "category:math-ph"},
		{"category", "nucl-ex", Target{Category, "nucl-ex"}, "category:nucl-ex"},
		{"category", "HEP-PH", Target{Category, "hep-ph"}, "category:hep-ph"},

		// Institutions: ROR (checksum verified) and OpenAlex.
		{"institution", "ror:03dbr7087", Target{Institution, "ror:03dbr7087"}, "institution:ror:03dbr7087"},
		{"institution", "ROR:03DBR7087", Target{Institution, "ror:03dbr7087"}, "institution:ror:03dbr7087"},
		{"institution", "https://ror.org/03dbr7087", Target{Institution, "ror:03dbr7087"}, "institution:ror:03dbr7087"},
		{"institution", "http://ror.org/03dbr7087", Target{Institution, "ror:03dbr7087"}, "institution:ror:03dbr7087"},
		{"institution", "03dbr7087", Target{Institution, "ror:03dbr7087"}, "institution:ror:03dbr7087"},
		{"institution", "ror:05dxps055", Target{Institution, "ror:05dxps055"}, "institution:ror:05dxps055"},
		{"institution", "ror:042nb2s44", Target{Institution, "ror:042nb2s44"}, "institution:ror:042nb2s44"},
		{"institution", "ror:00f54p054", Target{Institution, "ror:00f54p054"}, "institution:ror:00f54p054"},
		{"institution", "ror:01an7q238", Target{Institution, "ror:01an7q238"}, "institution:ror:01an7q238"},
		{"institution", "openalex:I136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
		{"institution", "openalex:i136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
		{"institution", "https://openalex.org/I136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
		{"institution", "https://openalex.org/institutions/I136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
		{"institution", "https://api.openalex.org/institutions/I136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
		{"institution", "http://openalex.org/institutions/i136199984", Target{Institution, "openalex:I136199984"}, "institution:openalex:I136199984"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.id, func(t *testing.T) {
			got, err := ParseTarget(c.kind, c.id)
			if err != nil {
				t.Fatalf("ParseTarget(%q, %q): %v", c.kind, c.id, err)
			}
			if got != c.want {
				t.Fatalf("ParseTarget(%q, %q) = %#v, want %#v", c.kind, c.id, got, c.want)
			}
			if k := got.Key(); k != c.key {
				t.Errorf("Key() = %q, want %q", k, c.key)
			}
			if got.IsArchive() != strings.HasPrefix(c.key, "archive:") {
				t.Errorf("IsArchive() = %v for key %q", got.IsArchive(), c.key)
			}
			back, err := TargetFromKey(got.Key())
			if err != nil || back != got {
				t.Errorf("TargetFromKey(%q) = %#v, %v; want %#v", got.Key(), back, err, got)
			}
			again, err := ParseTarget(string(got.Kind), got.ID)
			if err != nil || again != got {
				t.Errorf("re-parsing %v gives %#v, %v", got, again, err)
			}
		})
	}
}

func TestParseTargetRejects(t *testing.T) {
	cases := []struct {
		kind, id string
		field    string
		want     string // a part of the message
	}{
		{"", "cs.LG", "kind", "researcher, category, institution, query"},
		{"author", "1955166", "kind", `unknown kind "author"; the kinds are researcher, category, institution, query`},
		{"categories", "cs.LG", "kind", "researcher, category, institution, query"},
		{strings.Repeat("k", 1000), "cs.LG", "kind", `unknown kind "` + strings.Repeat("k", 60) + `…"; the kinds are`},

		{"researcher", "", "id", "an id is required; researcher ids look like openalex:A5023888391, orcid:0000-0002-1825-0097, s2:1741101, dblp:46/5782 or host:1955166 (a bare number is a host id)"},
		{"researcher", " \t ", "id", "an id is required"},
		{"researcher", "host:" + strings.Repeat("1", 196), "id", "longer than 200 characters"},
		{"researcher", "A5023888391", "id", `"A5023888391" is not a valid id; researcher ids look like`},
		{"researcher", "Jane Doe", "id", "researcher ids look like"},
		{"researcher", "ørcid:0000-0002-1825-0097", "id", "researcher ids look like"},
		{"researcher", "openalex:", "id", "not a valid OpenAlex author id; it should look like openalex:A5023888391"},
		{"researcher", "openalex:A", "id", "OpenAlex author id"},
		{"researcher", "openalex:A0", "id", "OpenAlex author id"},
		{"researcher", "openalex:A12x", "id", "OpenAlex author id"},
		{"researcher", "openalex:I136199984", "id", "OpenAlex author id"},
		{"researcher", "https://openalex.org/I136199984", "id", "OpenAlex author id"},
		{"researcher", "https://openalex.org/works/W2741809807", "id", "OpenAlex author id"},
		{"researcher", "orcid:0000-0002-1825-0098", "id", "the checksum of ORCID iD 0000-0002-1825-0098 does not match"},
		{"researcher", "0000-0002-1825-0098", "id", "checksum of ORCID iD 0000-0002-1825-0098 does not match"},
		{"researcher", "https://orcid.org/0000-0002-1694-2330", "id", "checksum"},
		{"researcher", "orcid:0000-0002-1825", "id", "not a valid ORCID iD; it should look like orcid:0000-0002-1825-0097"},
		{"researcher", "orcid:0000-0002-1825-009", "id", "ORCID iD"},
		{"researcher", "orcid:0000_0002_1825_0097", "id", "ORCID iD"},
		{"researcher", "orcid:0000-0002-18250-097", "id", "ORCID iD"},
		{"researcher", "orcid:X000-0002-1825-0097", "id", "ORCID iD"},
		{"researcher", "orcid:0000-0002-1825-009Y", "id", "ORCID iD"},
		{"researcher", "https://orcid.org/", "id", "ORCID iD"},
		{"researcher", "s2:", "id", "not a valid Semantic Scholar author id; it should look like s2:1741101"},
		{"researcher", "s2:abc", "id", "Semantic Scholar"},
		{"researcher", "s2:-1", "id", "Semantic Scholar"},
		{"researcher", "host:1.5", "id", "not a valid host id; it should look like host:1955166"},
		{"researcher", "host:0", "id", "host id"},
		{"researcher", "0", "id", "researcher ids look like"},
		{"researcher", "1 955 166", "id", "researcher ids look like"},
		{"researcher", "https://www.semanticscholar.org/author/1741101", "id", "researcher ids look like"},
		{"researcher", "dblp:", "id", "not a valid dblp person id; it should look like dblp:46/5782 or dblp:w/MingzhiWen"},
		{"researcher", "dblp:465782", "id", "dblp person id"},
		{"researcher", "dblp:4605/5782", "id", "dblp person id"},
		{"researcher", "dblp:46/", "id", "dblp person id"},
		{"researcher", "dblp:/5782", "id", "dblp person id"},
		{"researcher", "dblp:46/57a2", "id", "dblp person id"},
		{"researcher", "dblp:46/123456789", "id", "dblp person id"},
		{"researcher", "dblp:46/5782-", "id", "dblp person id"},
		{"researcher", "dblp:46/5782-x", "id", "dblp person id"},
		{"researcher", "dblp:46/5782-12345", "id", "dblp person id"},
		{"researcher", "dblp:46/5782/1", "id", "dblp person id"},
		{"researcher", "dblp:W/MingzhiWen", "id", "dblp person id"},
		{"researcher", "dblp:wm/MingzhiWen", "id", "dblp person id"},
		{"researcher", "dblp:w/1Wen", "id", "dblp person id"},
		{"researcher", "dblp:w/Mingzhi_Wen", "id", "dblp person id"},
		{"researcher", "dblp:w/Mingzhi%20Wen", "id", "dblp person id"},
		{"researcher", "dblp:../etc/passwd", "id", "dblp person id"},
		{"researcher", "https://dblp.org/pers/g/Gray_0001:Jim.html", "id", "researcher ids look like"},
		{"researcher", "w/MingzhiWen", "id", "researcher ids look like"},

		{"category", "", "id", "an id is required; use an active arXiv category like cs.LG or a whole archive like cs"},
		{"category", "cs.ZZ", "id", `"cs.ZZ" is not an active arXiv category or archive; use an active arXiv category like cs.LG or a whole archive like cs`},
		{"category", "csLG", "id", "like cs.LG"},
		{"category", "cs LG", "id", "like cs.LG"},
		{"category", "cs.", "id", "like cs.LG"},
		{"category", "grp_cs", "id", "like cs.LG"},
		{"category", "Computer Science", "id", "like cs.LG"},
		{"category", strings.Repeat("x", 201), "id", "longer than 200 characters"},

		{"institution", "", "id", "an id is required; institution ids look like ror:03dbr7087 or openalex:I136199984"},
		{"institution", "ror:03dbr7088", "id", "the checksum of ROR id 03dbr7088 does not match"},
		{"institution", "03dbr7088", "id", "checksum of ROR id"},
		{"institution", "ror:03dbr708", "id", "not a valid ROR id; it should look like ror:03dbr7087"},
		{"institution", "ror:13dbr7087", "id", "ROR id"},
		{"institution", "ror:03dbi7087", "id", "ROR id"},
		{"institution", "ror:03dbr70a7", "id", "ROR id"},
		{"institution", "https://ror.org/", "id", "ROR id"},
		{"institution", "I136199984", "id", `"I136199984" is not a valid id; institution ids look like`},
		{"institution", "University of Toronto", "id", "institution ids look like"},
		{"institution", "openalex:A5023888391", "id", "not a valid OpenAlex institution id; it should look like openalex:I136199984"},
		{"institution", "https://openalex.org/authors/A5023888391", "id", "OpenAlex institution id"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.id, func(t *testing.T) {
			got, err := ParseTarget(c.kind, c.id)
			if err == nil {
				t.Fatalf("ParseTarget(%q, %q) = %v, want an error", c.kind, c.id, got)
			}
			checkInvalid(t, err, c.field, c.want)
		})
	}
}

// checkInvalid fails t unless err is an *apperr.Error with Code Invalid, the
// field and a message containing want.
func checkInvalid(t *testing.T, err error, field, want string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *apperr.Error", err, err)
	}
	if e.Code != apperr.Invalid || e.Field != field {
		t.Errorf("code %q field %q, want %q %q", e.Code, e.Field, apperr.Invalid, field)
	}
	if !strings.Contains(e.Message, want) {
		t.Errorf("message %q does not contain %q", e.Message, want)
	}
}

func TestORCIDChecksumCatchesEveryOneCharacterChange(t *testing.T) {
	for _, valid := range []string{"0000000218250097", "0000000151093700", "000000021694233X"} {
		if _, err := ParseResearcherID("orcid:" + valid); err != nil {
			t.Fatalf("%s: %v", valid, err)
		}
		for i := range len(valid) {
			for _, r := range "0123456789X" {
				if byte(r) == valid[i] || r == 'X' && i != 15 {
					continue
				}
				changed := valid[:i] + string(r) + valid[i+1:]
				_, err := ParseResearcherID("orcid:" + changed)
				if err == nil {
					t.Errorf("orcid:%s (changed from %s) was accepted", changed, valid)
					continue
				}
				checkInvalid(t, err, "id", "checksum")
			}
		}
	}
}

func TestRORChecksumCatchesEveryOneCharacterChange(t *testing.T) {
	for _, valid := range []string{"03dbr7087", "05dxps055", "042nb2s44", "00f54p054", "01an7q238"} {
		if _, err := ParseInstitutionID("ror:" + valid); err != nil {
			t.Fatalf("%s: %v", valid, err)
		}
		for i := range len(valid) {
			for _, r := range crockfordDigits + "ilou" {
				if byte(r) == valid[i] {
					continue
				}
				changed := valid[:i] + string(r) + valid[i+1:]
				if _, err := ParseInstitutionID("ror:" + changed); err == nil {
					t.Errorf("ror:%s (changed from %s) was accepted", changed, valid)
				}
			}
		}
	}
}

func TestParseResearcherAndInstitutionID(t *testing.T) {
	// The forms papers' author and affiliation ids arrive in.
	ids := map[string]string{
		"https://openalex.org/A5023888391":      "openalex:A5023888391",
		"https://orcid.org/0000-0002-1825-0097": "orcid:0000-0002-1825-0097",
		"1955166":                               "host:1955166",
	}
	for in, want := range ids {
		if got, err := ParseResearcherID(in); err != nil || got != want {
			t.Errorf("ParseResearcherID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	insts := map[string]string{
		"https://openalex.org/I136199984": "openalex:I136199984",
		"https://ror.org/03dbr7087":       "ror:03dbr7087",
	}
	for in, want := range insts {
		if got, err := ParseInstitutionID(in); err != nil || got != want {
			t.Errorf("ParseInstitutionID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseResearcherID("ror:03dbr7087"); err == nil {
		t.Error("a ROR id was accepted as a researcher id")
	}
	if _, err := ParseInstitutionID("orcid:0000-0002-1825-0097"); err == nil {
		t.Error("an ORCID iD was accepted as an institution id")
	}
}

func TestTargetFromKeyRejects(t *testing.T) {
	keys := []string{
		"",
		"cs.LG",
		"group:cs",
		"category:",
		"category:cs.ZZ",    // a paper's unknown category is no follow
		"category:astro-ph", // a paper's legacy category; the follow is archive:astro-ph
		"category:cs",       // an archive written as a category
		"archive:cs.LG",     // a category written as an archive
		"archive:hep-th",    // hep-th is a category follow
		"category:CS.LG",    // not normalised
		"category:math.IT",  // not canonical
		"category: cs.LG",
		"researcher:1955166", // not normalised
		"researcher:openalex:a5023888391",
		"researcher:orcid:0000-0002-1825-0098",
		"institution:ror:03dbr7088",
		"institution:openalex:A5023888391",
	}
	for _, key := range keys {
		got, err := TargetFromKey(key)
		if err == nil {
			t.Errorf("TargetFromKey(%q) = %v, want an error", key, got)
			continue
		}
		checkInvalid(t, err, "key", "is not a follow's match key")
	}
}

func TestKeyOfUnknownKindIsEmpty(t *testing.T) {
	if k := (Target{}).Key(); k != "" {
		t.Errorf("zero Target key = %q", k)
	}
	if k := (Target{Kind: "group", ID: "cs"}).Key(); k != "" {
		t.Errorf("unknown kind key = %q", k)
	}
	if (Target{Kind: Researcher, ID: "cs"}).IsArchive() {
		t.Error("a researcher target is never an archive")
	}
}

func TestStringAndDisplayName(t *testing.T) {
	cases := []struct {
		t       Target
		str     string
		display string
	}{
		{Target{Category, "cs.LG"}, "category/cs.LG", "cs.LG — Machine Learning"},
		{Target{Category, "hep-th"}, "category/hep-th", "hep-th — High Energy Physics - Theory"},
		{Target{Category, "cs"}, "category/cs", "Computer Science (cs.*)"},
		{Target{Category, "astro-ph"}, "category/astro-ph", "Astrophysics (astro-ph.*)"},
		{Target{Category, "cs.ZZ"}, "category/cs.ZZ", "cs.ZZ"},
		{Target{Researcher, "orcid:0000-0002-1825-0097"}, "researcher/orcid:0000-0002-1825-0097", "orcid:0000-0002-1825-0097"},
		{Target{Institution, "ror:03dbr7087"}, "institution/ror:03dbr7087", "ror:03dbr7087"},
	}
	for _, c := range cases {
		if s := c.t.String(); s != c.str {
			t.Errorf("String() = %q, want %q", s, c.str)
		}
		if d := c.t.DisplayName(); d != c.display {
			t.Errorf("%v DisplayName() = %q, want %q", c.t, d, c.display)
		}
	}
}

// TestReasonName: a label wins; a researcher is named by the paper's author
// carrying the id (even without a name lookup for others); an archive by its
// DisplayName, the same name as on the settings page; anything else by its
// bare ID.
func TestReasonName(t *testing.T) {
	authors := func(id string) (string, bool) {
		if id == "openalex:A5023888391" {
			return "Mingzhi Wen", true
		}
		return "", false
	}
	wen := Target{Researcher, "openalex:A5023888391"}
	cases := []struct {
		t          Target
		label      string
		authorName func(string) (string, bool)
		want       string
	}{
		{Target{Category, "cs.LG"}, "", authors, "cs.LG"},
		{Target{Category, "cs.LG"}, "My ML", authors, "My ML"},
		{Target{Category, "cs"}, "", nil, "Computer Science (cs.*)"},
		{Target{Category, "astro-ph"}, "", nil, "Astrophysics (astro-ph.*)"},
		{wen, "", authors, "Mingzhi Wen"},
		{wen, "Wen lab", authors, "Wen lab"},
		{wen, "", nil, "openalex:A5023888391"},
		{Target{Researcher, "orcid:0000-0002-1825-0097"}, "", authors, "orcid:0000-0002-1825-0097"},
		{Target{Institution, "ror:03dbr7087"}, "", authors, "ror:03dbr7087"},
	}
	for _, c := range cases {
		if got := c.t.ReasonName(c.label, c.authorName); got != c.want {
			t.Errorf("%v.ReasonName(%q) = %q, want %q", c.t, c.label, got, c.want)
		}
	}
	if a := (Target{Category, "cs"}); a.ReasonName("", nil) != a.DisplayName() {
		t.Errorf("an archive has two names: %q and %q", a.ReasonName("", nil), a.DisplayName())
	}
}

// FuzzParseTarget checks that ParseTarget never panics, fails only with the
// documented error, and that what it accepts is normalised: its ID re-parses
// to itself and its key leads back to it.
func FuzzParseTarget(f *testing.F) {
	f.Log("hostile: decoders")
	f.Fuzz(func(t *testing.T, kind, id string) {
		got, err := ParseTarget(kind, id)
		if err != nil {
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.Invalid || (e.Field != "kind" && e.Field != "id") || e.Message == "" {
				t.Fatalf("ParseTarget(%q, %q): bad error %#v", kind, id, err)
			}
			return
		}
		again, err := ParseTarget(string(got.Kind), got.ID)
		if err != nil || again != got {
			t.Fatalf("ParseTarget(%q, %q) = %#v, but its ID re-parses to %#v, %v", kind, id, got, again, err)
		}
		back, err := TargetFromKey(got.Key())
		if err != nil || back != got {
			t.Fatalf("TargetFromKey(%q) = %#v, %v; want %#v", got.Key(), back, err, got)
		}
		if got.DisplayName() == "" {
			t.Fatalf("%v has an empty display name", got)
		}
	})
}

// TestHasKeyIsKey: HasKey(k) is k == Key(), for every kind (an archive's
// key too) and for keys that differ from it by a kind, a character or a
// prefix of the id.
func TestHasKeyIsKey(t *testing.T) {
	targets := []Target{
		{Kind: Researcher, ID: "openalex:A5023888391"},
		{Kind: Category, ID: "cs.LG"},
		{Kind: Category, ID: "astro-ph"},
		{Kind: Institution, ID: "ror:03dbr7087"},
		{Kind: Query, ID: `abs:"dark matter"`},
		{Kind: Paper, ID: "2202.02326"},
		{Kind: "nonsense", ID: "x"},
	}
	keys := []string{"", "category:cs.L", "category:cs.LGx", "category:astro-ph", "archive:astro-ph", "archive:cs.LG",
		"researcher:openalex:A502388839", "institution:ror:03dbr7087", "paper:2202.02326", "query:abs:\"dark matter\"", ":x", "nonsense:x"}
	for _, tg := range targets {
		for _, k := range append(keys, tg.Key()) {
			if got, want := tg.HasKey(k), k != "" && k == tg.Key(); got != want {
				t.Errorf("%v.HasKey(%q) = %v, want %v (Key %q)", tg, k, got, want, tg.Key())
			}
		}
	}
}

// TestParseRefNamesTheBodysFields: a follow named in a body as {"kind",
// "id"} reports its mistakes under the body's names, its target as
// ParseTarget's.
func TestParseRefNamesTheBodysFields(t *testing.T) {
	for _, c := range []struct{ kind, id, field string }{
		{"planet", "x", "follow.kind"},
		{"", "cs.LG", "follow.kind"},
		{"category", "", "follow.id"},
		{"category", "no.such", "follow.id"},
		{"researcher", "orcid:0000-0000-0000-0000", "follow.id"},
	} {
		_, err := ParseRef("follow", c.kind, c.id)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || e.Field != c.field {
			t.Errorf("ParseRef(%q, %q) = %v, want an Invalid error naming %s", c.kind, c.id, err, c.field)
		}
	}
	got, err := ParseRef("follow", " Category ", "CS.lg")
	want, _ := ParseTarget("category", "cs.LG")
	if err != nil || got != want {
		t.Errorf("ParseRef of a good follow = %v, %v; want %v", got, err, want)
	}
}
