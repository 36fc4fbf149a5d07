package paper

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/internal/arxivid"
	"followfeed/internal/text"
)

// Limits on what one paper may carry; sources are trimmed to them or, for
// pushed papers, refused with a message.
const (
	MaxTitle        = 2000
	MaxAbstract     = 100_000
	MaxAuthors      = 5000
	MaxAuthorName   = 300
	MaxCategories   = 30
	MaxInstitutions = 500
	MaxTextField    = 4000 // comments, journal reference, DOI
	// MaxVersion is the highest version a paper may carry: an arXiv id's
	// version has at most four digits ("v9999").
	MaxVersion = 9999
)

var (
	// A category as arXiv writes them (cs.LG, hep-th, math-ph, q-fin.EC).
	categoryRE = regexp.MustCompile(`^[a-z][a-z-]{0,15}(?:\.[A-Za-z][A-Za-z-]{0,15})?$`)
)

// ParseArxivID splits an arXiv identifier into id and version (0 when the
// input has none): arxivid.Parse, the one reading of ids (package follow's
// paper follows read them the same way). It accepts "2202.02326",
// "2202.02326v2", the old form "astro-ph/9901001v1", an "arXiv:" prefix and
// abs/pdf URLs, and refuses ids arXiv cannot have.
func ParseArxivID(s string) (id string, version int, err error) { return arxivid.Parse(s) }

// FieldError is one problem of a paper, naming its field.
type FieldError struct {
	Field  string
	Reason string
}

// Error is "field: reason".
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Normalize cleans p in place (ids, whitespace, categories, author and
// institution ids, links) and returns the first problem that makes it
// unstorable. strict refuses what a lenient source would have trimmed:
// pushed papers are strict, harvested ones are trimmed to the limits.
func (p *Paper) Normalize(strict bool) *FieldError {
	id, v, err := ParseArxivID(p.ArxivID)
	if err != nil {
		return &FieldError{"arxiv_id", err.Error()}
	}
	p.ArxivID = id
	if v > 0 {
		if p.Version > 0 && p.Version != v {
			return &FieldError{"arxiv_id", fmt.Sprintf("version v%d disagrees with version %d", v, p.Version)}
		}
		p.Version = v
	}
	if p.Version < 0 || p.Version > MaxVersion {
		return &FieldError{"version", fmt.Sprintf("must be between 1 and %d (0 or absent: unknown)", MaxVersion)}
	}
	if p.Deleted {
		return nil
	}

	var fe *FieldError
	if p.Title, fe = cleanText("title", p.Title, MaxTitle, strict); fe != nil {
		return fe
	}
	if p.Title == "" {
		return &FieldError{"title", "is required"}
	}
	if p.Abstract, fe = cleanAbstract(p.Abstract, strict); fe != nil {
		return fe
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"doi", &p.DOI}, {"journal_ref", &p.JournalRef}, {"comments", &p.Comments}} {
		if *f.v, fe = cleanText(f.name, *f.v, MaxTextField, strict); fe != nil {
			return fe
		}
	}
	if fe = p.normalizeCategories(strict); fe != nil {
		return fe
	}
	if fe = p.normalizeAuthors(strict); fe != nil {
		return fe
	}
	if fe = p.normalizeInstitutions(strict); fe != nil {
		return fe
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.SubmittedAt
	}
	if p.SubmittedAt.IsZero() {
		p.SubmittedAt = p.UpdatedAt
	}
	// PostgreSQL keeps microseconds: truncate so a stored paper compares
	// equal to the record it came from.
	for _, t := range []*time.Time{&p.SubmittedAt, &p.UpdatedAt, &p.AnnouncedAt} {
		*t = t.UTC().Truncate(time.Microsecond)
	}
	if p.AbsURL == "" {
		p.AbsURL = "https://arxiv.org/abs/" + p.ArxivID
	}
	if p.PDFURL == "" {
		p.PDFURL = "https://arxiv.org/pdf/" + p.ArxivID
	}
	for _, u := range []struct{ name, v string }{{"abs_url", p.AbsURL}, {"pdf_url", p.PDFURL}} {
		if !(strings.HasPrefix(u.v, "https://") || strings.HasPrefix(u.v, "http://")) || len(u.v) > 2000 || strings.ContainsAny(u.v, " \n\r\t<>\"") {
			return &FieldError{u.name, "must be an http(s) URL"}
		}
	}
	return nil
}

func (p *Paper) normalizeCategories(strict bool) *FieldError {
	p.PrimaryCategory = strings.TrimSpace(p.PrimaryCategory)
	if p.PrimaryCategory == "" && len(p.Categories) > 0 {
		p.PrimaryCategory = strings.TrimSpace(p.Categories[0])
	}
	if p.PrimaryCategory == "" {
		return &FieldError{"primary_category", "is required (e.g. cs.LG)"}
	}
	cats := []string{p.PrimaryCategory}
	for _, c := range p.Categories {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(cats, c) {
			cats = append(cats, c)
		}
	}
	if len(cats) > MaxCategories {
		if strict {
			return &FieldError{"categories", fmt.Sprintf("at most %d categories", MaxCategories)}
		}
		cats = cats[:MaxCategories]
	}
	kept := cats[:0]
	for i, c := range cats {
		if canon, ok := follow.CanonicalCategory(c); ok {
			// Keep the paper's own spelling (math.IT stays math.IT in the
			// record) but fix its case; keys canonicalise separately.
			if strings.EqualFold(canon, c) {
				c = canon
			}
		} else if !categoryRE.MatchString(c) {
			if strict || i == 0 {
				field := "categories"
				if i == 0 {
					field = "primary_category"
				}
				return &FieldError{field, fmt.Sprintf("%q is not an arXiv category like cs.LG or hep-th", text.Truncate(c, 40))}
			}
			continue
		}
		kept = append(kept, c)
	}
	p.PrimaryCategory, p.Categories = kept[0], kept
	return nil
}

func (p *Paper) normalizeAuthors(strict bool) *FieldError {
	if len(p.Authors) > MaxAuthors {
		if strict {
			return &FieldError{"authors", fmt.Sprintf("at most %d authors", MaxAuthors)}
		}
		p.Authors = p.Authors[:MaxAuthors]
	}
	out := p.Authors[:0]
	for i, a := range p.Authors {
		name, fe := cleanText(fmt.Sprintf("authors[%d].name", i), a.Name, MaxAuthorName, strict)
		if fe != nil {
			return fe
		}
		var ids []string
		for j, raw := range a.IDs {
			id, err := follow.ParseResearcherID(raw)
			if err != nil {
				if strict {
					return &FieldError{fmt.Sprintf("authors[%d].ids[%d]", i, j), errText(err)}
				}
				continue
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if name == "" && len(ids) == 0 {
			if strict {
				return &FieldError{fmt.Sprintf("authors[%d].name", i), "is required"}
			}
			continue
		}
		out = append(out, Author{Name: name, IDs: ids})
	}
	p.Authors = out
	return nil
}

func (p *Paper) normalizeInstitutions(strict bool) *FieldError {
	if len(p.Institutions) > MaxInstitutions {
		if strict {
			return &FieldError{"institutions", fmt.Sprintf("at most %d institutions", MaxInstitutions)}
		}
		p.Institutions = p.Institutions[:MaxInstitutions]
	}
	var out []string
	for i, raw := range p.Institutions {
		id, err := follow.ParseInstitutionID(raw)
		if err != nil {
			if strict {
				return &FieldError{fmt.Sprintf("institutions[%d]", i), errText(err)}
			}
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	p.Institutions = out
	return nil
}

// cleanText collapses whitespace, drops invalid UTF-8, control and
// bidirectional characters (text.Collapse), and enforces max (in
// characters): strict refuses longer text, lenient truncates it.
func cleanText(field, s string, max int, strict bool) (string, *FieldError) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff {
			return ' '
		}
		return r
	}, s)
	s = text.Collapse(s, -1) // no bidirectional control, one line
	if utf8.RuneCountInString(s) > max {
		if strict {
			return "", &FieldError{field, fmt.Sprintf("at most %d characters", max)}
		}
		s = string([]rune(s)[:max])
	}
	return s, nil
}

// paragraphStart is where an abstract's new paragraph begins: a blank
// line, or (arXiv's convention) a line break followed by indentation.
var paragraphStart = regexp.MustCompile(`\n[ \t]*\n\s*|\n[ \t]+`)

// cleanAbstract is cleanText for the abstract, keeping its paragraphs: each
// is collapsed to one line and they are joined by a blank line ("\n\n"),
// which the feeds render as separate <p>s.
func cleanAbstract(s string, strict bool) (string, *FieldError) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var paras []string
	for _, part := range paragraphStart.Split(strings.TrimSpace(s), -1) {
		part, fe := cleanText("abstract", part, MaxAbstract, strict)
		if fe != nil {
			return "", fe
		}
		if part != "" {
			paras = append(paras, part)
		}
	}
	out := strings.Join(paras, "\n\n")
	if utf8.RuneCountInString(out) > MaxAbstract {
		if strict {
			return "", &FieldError{"abstract", fmt.Sprintf("at most %d characters", MaxAbstract)}
		}
		out = strings.TrimSpace(string([]rune(out)[:MaxAbstract]))
	}
	return out, nil
}

// errText is an error's message without the field prefix of an
// *apperr.Error (the caller names the field itself).
func errText(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Message
	}
	return err.Error()
}

// NameKey is the form in which author names compare: lowercase, whitespace
// collapsed. Merging keeps ids across records by it; enrichment matches
// OpenAlex authors by it first.
func NameKey(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
