// Package follow parses and normalises what users follow — researchers,
// arXiv categories and institutions — and derives the match keys that new
// papers are matched to follows by. It is pure: the only data it reads is the
// arXiv taxonomy compiled into the binary.
package follow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"followfeed/apperr"
	"followfeed/internal/arxivid"
	"followfeed/internal/text"
)

// Kind is what a follow targets.
type Kind string

// The kinds of follow target.
const (
	Researcher  Kind = "researcher"
	Category    Kind = "category"
	Institution Kind = "institution"
	// Query is a query (package search); its ID is the search's
	// normal form.
	Query Kind = "query"
	// Paper is one arXiv paper's events (new version, publication,
	// withdrawal, citations); its ID is the arXiv id without version.
	Paper Kind = "paper"
)

// Target is a normalised follow target. ID is the canonical short form:
//
//	researcher:  "openalex:A5023888391", "orcid:0000-0002-1825-0097", "s2:1741101", "host:1955166",
//	             "dblp:46/5782", "dblp:w/MingzhiWen"
//	category:    "cs.LG" (a category) or "cs" (an archive-level follow)
//	institution: "ror:03dbr7087", "openalex:I136199984"
//
// Targets returned by ParseTarget and TargetFromKey are normalised: two
// spellings of the same target give equal Targets.
type Target struct {
	Kind Kind
	ID   string
}

// maxIDLength is the longest id, after trimming, that is accepted.
const maxIDLength = 200

// Messages naming the accepted forms of each kind.
const (
	kindForms        = "the kinds are researcher, category, institution, query (a query) and paper (an arXiv id)"
	researcherForms  = "researcher ids look like openalex:A5023888391, orcid:0000-0002-1825-0097, s2:1741101, dblp:46/5782 or host:1955166 (a bare number is a host id)"
	categoryForms    = "use an active arXiv category like cs.LG or a whole archive like cs"
	institutionForms = "institution ids look like ror:03dbr7087 or openalex:I136199984 (https://ror.org/… and https://openalex.org/… links work too)"
)

// ParseTarget normalises a follow target given as a kind ("researcher",
// "category" or "institution", ignoring case and surrounding space) and an id
// in any accepted form (see Target). Every error is an *apperr.Error with
// Code apperr.Invalid, Field "kind" or "id", and a message naming the
// expected form.
func ParseTarget(kind, id string) (Target, error) {
	k, err := parseKind(kind)
	if err != nil {
		return Target{}, err
	}
	var norm string
	switch k {
	case Researcher:
		norm, err = ParseResearcherID(id)
	case Category:
		norm, err = parseCategoryID(id)
	case Institution:
		norm, err = ParseInstitutionID(id)
	case Query:
		norm, err = NormalizeQuery(id)
	case Paper:
		norm, err = ParsePaperID(id)
	}
	if err != nil {
		return Target{}, err
	}
	return Target{Kind: k, ID: norm}, nil
}

// ParseRef is ParseTarget of a follow named inside a JSON body as the
// object field {"kind", "id"}: its errors name field+".kind" or
// field+".id" (e.g. "follow.kind"), so every body that refers to a follow
// reports the same mistake under the same name.
func ParseRef(field, kind, id string) (Target, error) {
	t, err := ParseTarget(kind, id)
	if err != nil {
		if e, ok := apperr.As(err); ok && e.Field != "" {
			return Target{}, apperr.Refield(err, field+"."+e.Field)
		}
		return Target{}, apperr.Refield(err, field)
	}
	return t, nil
}

func parseKind(kind string) (Kind, error) {
	k := Kind(lowerASCII(strings.TrimSpace(kind)))
	switch k {
	case Researcher, Category, Institution, Query, Paper:
		return k, nil
	case "":
		return "", apperr.InvalidField("kind", "a kind is required; %s", kindForms)
	}
	return "", apperr.InvalidField("kind", "unknown kind %s; %s", quote(kind), kindForms)
}

// quote returns s quoted for a message, shortened when long, so that no
// input is echoed at length.
func quote(s string) string {
	const maxQuoted = 60
	return strconv.Quote(text.Truncate(s, maxQuoted)) // never splits a character
}

// Key returns the match key of t: "researcher:<ID>", "category:<ID>",
// "archive:<ID>" for an archive-level follow, or "institution:<ID>". A paper
// matches a follow when one of its keys equals the follow's key. Key is ""
// for a Target of unknown kind.
func (t Target) Key() string {
	prefix := t.keyPrefix()
	if prefix == "" {
		return ""
	}
	return prefix + t.ID
}

// HasKey reports whether key is t.Key(), without building t's key (a
// user's mutes compare their follow with every candidate's reasons).
func (t Target) HasKey(key string) bool {
	prefix := t.keyPrefix()
	return prefix != "" && len(key) == len(prefix)+len(t.ID) &&
		strings.HasPrefix(key, prefix) && key[len(prefix):] == t.ID
}

// keyPrefix is the part of t's key before its ID ("" for an unknown kind).
func (t Target) keyPrefix() string {
	switch t.Kind {
	case Researcher:
		return "researcher:"
	case Category:
		if t.IsArchive() {
			return "archive:"
		}
		return "category:"
	case Institution:
		return "institution:"
	case Query:
		return "query:"
	case Paper:
		return "paper:"
	}
	return ""
}

// IsArchive reports whether t follows a whole arXiv archive ("cs", "astro-ph")
// rather than one category.
func (t Target) IsArchive() bool {
	return t.Kind == Category && loadTaxonomy().isArchiveFollow(t.ID)
}

// String returns "<kind>/<id>", e.g. "category/cs.LG".
func (t Target) String() string {
	return string(t.Kind) + "/" + t.ID
}

// DisplayName is what people read for t: "cs.LG — Machine Learning" for a
// category, "Computer Science (cs.*)" for an archive, and the ID otherwise.
// It is the one name of an archive everywhere: settings, feed titles, and
// (through ReasonName) feed items and digests.
func (t Target) DisplayName() string {
	if name, ok := queryOrPaperName(t); ok {
		return name
	}
	if t.IsArchive() {
		if name, ok := ArchiveName(t.ID); ok {
			return name + " (" + t.ID + ".*)"
		}
	}
	if t.Kind == Category {
		if c, ok := LookupCategory(t.ID); ok {
			return t.ID + " — " + c.Name
		}
	}
	return t.ID
}

// ReasonName is how t is named to its user as the reason a paper matched,
// in feed items and digests: label (the user's own name for the follow)
// when set; for a researcher, the name of the paper's author who carries
// that id, as authorName reports it (authorName may be nil); the
// DisplayName of an archive ("Computer Science (cs.*)"); the bare ID
// otherwise ("cs.LG", "ror:03dbr7087"), short because a paper often has
// several reasons.
func (t Target) ReasonName(label string, authorName func(researcherID string) (string, bool)) string {
	if label != "" {
		return label
	}
	if t.Kind == Researcher && authorName != nil {
		if name, ok := authorName(t.ID); ok {
			return name
		}
	}
	if t.Kind == Query {
		return "the query " + t.ID
	}
	if t.IsArchive() || t.Kind == Paper {
		return t.DisplayName()
	}
	return t.ID
}

// keyKinds maps the prefix of a match key to the kind of target it keys.
var keyKinds = map[string]Kind{
	"researcher":  Researcher,
	"category":    Category,
	"archive":     Category,
	"institution": Institution,
	"query":       Query,
	"paper":       Paper,
}

// TargetFromKey is the inverse of Key: TargetFromKey(t.Key()) == t for every
// normalised t. It accepts only keys exactly as Key writes them, so a key of
// a paper's unknown or legacy category ("category:cs.ZZ",
// "category:astro-ph") is an error. Errors are *apperr.Error with Code
// apperr.Invalid and Field "key".
func TargetFromKey(key string) (Target, error) {
	prefix, id, _ := strings.Cut(key, ":")
	kind, ok := keyKinds[prefix]
	if !ok {
		return Target{}, badKey(key, nil)
	}
	if kind == Paper && arxivid.Normalized(id) {
		// A paper follow stored by a release whose reading of ids was
		// looser (it took month 13, "9999.99999") stays readable: it
		// matches nothing, and its user can still see and remove it.
		return Target{Kind: Paper, ID: id}, nil
	}
	t, err := ParseTarget(string(kind), id)
	if err != nil {
		return Target{}, badKey(key, err)
	}
	if t.Key() != key {
		return Target{}, badKey(key, nil)
	}
	return t, nil
}

func badKey(key string, cause error) error {
	return &apperr.Error{
		Code:    apperr.Invalid,
		Field:   "key",
		Message: fmt.Sprintf("%s is not a follow's match key; keys look like researcher:orcid:0000-0002-1825-0097, category:cs.LG, archive:cs or institution:ror:03dbr7087", quote(key)),
		Err:     cause,
	}
}

// ParseResearcherID normalises a researcher id, as ParseTarget does for kind
// researcher: "openalex:A…", "orcid:XXXX-XXXX-XXXX-XXXX" (checksum
// verified), "s2:…", "dblp:…" (a dblp person id, see parseDBLP) or
// "host:…", from those forms (prefix in any case), from openalex.org,
// orcid.org and dblp.org/pid/ links, from a bare dashed ORCID iD, or from a
// bare number (a host id). Leading zeros of numbers are dropped (not in
// dblp ids, where they are part of the id). Errors are as for ParseTarget,
// with Field "id".
func ParseResearcherID(s string) (string, error) {
	id, err := cleanID(s, researcherForms)
	if err != nil {
		return "", err
	}
	return parseWithSchemes(id, researcherSchemes, parseBareResearcher, researcherForms)
}

// ParseInstitutionID normalises an institution id, as ParseTarget does for
// kind institution: "ror:…" (lower case, checksum verified) or
// "openalex:I…", from those forms (prefix in any case), from ror.org and
// openalex.org links, or from a bare ROR id. Errors are as for ParseTarget,
// with Field "id".
func ParseInstitutionID(s string) (string, error) {
	id, err := cleanID(s, institutionForms)
	if err != nil {
		return "", err
	}
	return parseWithSchemes(id, institutionSchemes, parseBareInstitution, institutionForms)
}

func parseCategoryID(s string) (string, error) {
	id, err := cleanID(s, categoryForms)
	if err != nil {
		return "", err
	}
	tx := loadTaxonomy()
	if c, ok := tx.category(id); ok && c.Active {
		return tx.canonical[lowerASCII(c.ID)], nil
	}
	if a, ok := tx.archive(id); ok && a.Active {
		return a.ID, nil
	}
	if canonical, ok := CanonicalCategory(id); ok && tx.isActiveCategory(canonical) {
		return canonical, nil
	}
	return "", apperr.InvalidField("id", "%q is not an active arXiv category or archive; %s", id, categoryForms)
}

// cleanID trims s and rejects ids that are empty, too long or not printable
// ASCII, naming the expected forms.
func cleanID(s, forms string) (string, error) {
	id := strings.TrimSpace(s)
	switch {
	case id == "":
		return "", apperr.InvalidField("id", "an id is required; %s", forms)
	case len(id) > maxIDLength:
		return "", apperr.InvalidField("id", "the id is longer than %d characters; %s", maxIDLength, forms)
	case !printableASCII(id):
		return "", apperr.InvalidField("id", "%q has characters no id has; %s", id, forms)
	}
	return id, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// errShape is returned by the id parsers when the input does not have the
// form they read; callers turn it into a message naming the expected form.
var errShape = errors.New("id has the wrong form")

// A scheme is one kind of identifier: the prefixes that introduce it (lower
// case; a longer prefix before any prefix of it) and how to read the rest.
type scheme struct {
	name     string // for messages: "ORCID iD"
	example  string // the normalised form, for messages
	prefixes []string
	parse    func(rest string) (string, error) // errShape when rest is malformed
}

var researcherSchemes = []scheme{
	{
		name:    "OpenAlex author id",
		example: "openalex:A5023888391",
		prefixes: []string{
			"https://openalex.org/authors/", "http://openalex.org/authors/",
			"https://api.openalex.org/authors/", "http://api.openalex.org/authors/",
			"https://openalex.org/", "http://openalex.org/", "openalex:",
		},
		parse: openAlexParser('A'),
	},
	{
		name:     "ORCID iD",
		example:  "orcid:0000-0002-1825-0097",
		prefixes: []string{"https://orcid.org/", "http://orcid.org/", "orcid:"},
		parse:    parseORCID,
	},
	{name: "Semantic Scholar author id", example: "s2:1741101", prefixes: []string{"s2:"}, parse: numberParser("s2:")},
	{
		name:    "dblp person id",
		example: "dblp:46/5782 or dblp:w/MingzhiWen",
		prefixes: []string{
			"https://dblp.org/pid/", "http://dblp.org/pid/",
			"https://dblp.uni-trier.de/pid/", "http://dblp.uni-trier.de/pid/", "dblp:",
		},
		parse: parseDBLP,
	},
	{name: "host id", example: "host:1955166", prefixes: []string{"host:"}, parse: numberParser("host:")},
}

var institutionSchemes = []scheme{
	{
		name:     "ROR id",
		example:  "ror:03dbr7087",
		prefixes: []string{"https://ror.org/", "http://ror.org/", "ror:"},
		parse:    parseROR,
	},
	{
		name:    "OpenAlex institution id",
		example: "openalex:I136199984",
		prefixes: []string{
			"https://openalex.org/institutions/", "http://openalex.org/institutions/",
			"https://api.openalex.org/institutions/", "http://api.openalex.org/institutions/",
			"https://openalex.org/", "http://openalex.org/", "openalex:",
		},
		parse: openAlexParser('I'),
	},
}

// parseWithSchemes reads id with the first scheme one of whose prefixes it
// starts with (ignoring case), or with bare when none does.
func parseWithSchemes(id string, schemes []scheme, bare func(string) (string, error), forms string) (string, error) {
	for _, s := range schemes {
		for _, p := range s.prefixes {
			if hasPrefixFold(id, p) {
				return s.read(id, id[len(p):])
			}
		}
	}
	v, err := bare(id)
	if errors.Is(err, errShape) {
		return "", apperr.InvalidField("id", "%q is not a valid id; %s", id, forms)
	}
	return v, err
}

func (s scheme) read(id, rest string) (string, error) {
	v, err := s.parse(rest)
	if errors.Is(err, errShape) {
		return "", apperr.InvalidField("id", "%q is not a valid %s; it should look like %s", id, s.name, s.example)
	}
	return v, err
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && lowerASCII(s[:len(prefix)]) == prefix
}

// parseBareResearcher reads a researcher id without a prefix: a number is a
// host id, a dashed ORCID iD is an ORCID iD.
func parseBareResearcher(id string) (string, error) {
	if allDigits(id) {
		return numberParser("host:")(id)
	}
	if len(id) == orcidDashedLength {
		return parseORCID(id)
	}
	return "", errShape
}

// parseBareInstitution reads an institution id without a prefix: only a ROR
// id is unambiguous.
func parseBareInstitution(id string) (string, error) {
	return parseROR(id)
}

// numberParser returns a parser of a positive decimal number, written
// without leading zeros after prefix.
func numberParser(prefix string) func(string) (string, error) {
	return func(s string) (string, error) {
		n, ok := normaliseNumber(s)
		if !ok {
			return "", errShape
		}
		return prefix + n, nil
	}
}

// openAlexParser returns a parser of an OpenAlex id of the entity whose
// letter is letter ('A' author, 'I' institution), in either case.
func openAlexParser(letter byte) func(string) (string, error) {
	return func(s string) (string, error) {
		if s == "" || s[0] != letter && s[0] != letter+('a'-'A') {
			return "", errShape
		}
		n, ok := normaliseNumber(s[1:])
		if !ok {
			return "", errShape
		}
		return "openalex:" + string(letter) + n, nil
	}
}

// normaliseNumber returns the digits s without leading zeros; it is false
// unless s is digits with a value above zero.
func normaliseNumber(s string) (string, bool) {
	if !allDigits(s) {
		return "", false
	}
	n := strings.TrimLeft(s, "0")
	return n, n != ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseDBLP reads a dblp person id (a "pid", the part after
// https://dblp.org/pid/ of an author's persistent bibliography URL, and
// after "homepages/" in the key of the person's record in dblp's XML):
//
//	numeric: 1–3 digits "/" 1–8 digits, e.g. 46/5782, 04/8414, 331/0100
//	legacy:  a lower-case letter "/" a name of ASCII letters and digits
//	         starting with a letter, e.g. m/AndrewMcCallum, w/MingzhiWen
//
// either optionally followed by a disambiguation suffix "-" 1–4 digits
// (177/9741-2). The id is kept as it is: dblp ids are case-sensitive and
// their leading zeros are part of them. A trailing ".html" or ".xml" (of a
// copied link) is dropped.
func parseDBLP(s string) (string, error) {
	for _, ext := range []string{".html", ".xml"} {
		if strings.HasSuffix(s, ext) {
			s = s[:len(s)-len(ext)]
			break
		}
	}
	head, name, ok := strings.Cut(s, "/")
	if !ok {
		return "", errShape
	}
	if base, suffix, has := strings.Cut(name, "-"); has {
		if !allDigits(suffix) || len(suffix) > 4 {
			return "", errShape
		}
		name = base
	}
	switch {
	case allDigits(head) && len(head) <= 3:
		if !allDigits(name) || len(name) > 8 {
			return "", errShape
		}
	case len(head) == 1 && head[0] >= 'a' && head[0] <= 'z':
		if name == "" || !isASCIILetter(name[0]) {
			return "", errShape
		}
		for i := 1; i < len(name); i++ {
			if !isASCIILetter(name[i]) && (name[i] < '0' || name[i] > '9') {
				return "", errShape
			}
		}
	default:
		return "", errShape
	}
	return "dblp:" + s, nil
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// orcidDashedLength is the length of "0000-0002-1825-0097".
const orcidDashedLength = 19

// parseORCID reads an ORCID iD, "0000-0002-1825-0097" or its 16 characters
// without dashes (the last may be x or X), and verifies its ISO 7064 MOD
// 11-2 check character.
func parseORCID(s string) (string, error) {
	chars, ok := orcidCharacters(s)
	if !ok {
		return "", errShape
	}
	dashed := chars[0:4] + "-" + chars[4:8] + "-" + chars[8:12] + "-" + chars[12:16]
	if orcidCheckChar(chars[:15]) != chars[15] {
		return "", apperr.InvalidField("id", "the checksum of ORCID iD %s does not match (its last character is a check character); check the iD for a typo", dashed)
	}
	return "orcid:" + dashed, nil
}

// orcidCharacters returns the 16 characters of an ORCID iD without dashes
// and with an upper-case X, or false when s is not shaped like one.
func orcidCharacters(s string) (string, bool) {
	if len(s) == orcidDashedLength {
		if s[4] != '-' || s[9] != '-' || s[14] != '-' {
			return "", false
		}
		s = s[0:4] + s[5:9] + s[10:14] + s[15:19]
	}
	if len(s) != 16 || !allDigits(s[:15]) {
		return "", false
	}
	last := s[15]
	if last == 'x' {
		last = 'X'
	}
	if last != 'X' && (last < '0' || last > '9') {
		return "", false
	}
	return s[:15] + string(last), true
}

// orcidCheckChar computes the ISO 7064 MOD 11-2 check character of the
// first 15 digits of an ORCID iD.
func orcidCheckChar(digits string) byte {
	total := 0
	for i := 0; i < len(digits); i++ {
		total = (total + int(digits[i]-'0')) * 2
	}
	result := (12 - total%11) % 11
	if result == 10 {
		return 'X'
	}
	return byte('0' + result)
}

// crockfordDigits are the digits of ROR's Crockford base32, in value order.
const crockfordDigits = "0123456789abcdefghjkmnpqrstvwxyz"

// parseROR reads a ROR id: "0", six Crockford base32 digits and two decimal
// check digits, in either case, and verifies the ISO 7064 MOD 97-10 check
// over the value of the first seven characters.
func parseROR(s string) (string, error) {
	id := lowerASCII(s)
	if len(id) != 9 || id[0] != '0' || !allDigits(id[7:]) {
		return "", errShape
	}
	n, ok := crockfordValue(id[:7])
	if !ok {
		return "", errShape
	}
	if fmt.Sprintf("%02d", 98-(n*100)%97) != id[7:] {
		return "", apperr.InvalidField("id", "the checksum of ROR id %s does not match (its last two digits are check digits); check the id for a typo", id)
	}
	return "ror:" + id, nil
}

// crockfordValue returns the value of s in ROR's lower-case Crockford
// base32, or false when s has another character (such as i, l, o or u).
func crockfordValue(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(crockfordDigits, s[i])
		if d < 0 {
			return 0, false
		}
		n = n*32 + int64(d)
	}
	return n, true
}
