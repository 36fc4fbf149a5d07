// Package arxivid reads arXiv identifiers as people and hosts write them,
// for every package that takes one (package paper's stored ids, package
// follow's paper follows): one reading, so an id one place takes is an id
// every place takes.
package arxivid

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"followfeed/internal/text"
)

var (
	// New-style ids: YYMM.NNNN (2007-2014) or YYMM.NNNNN (2015-).
	newID = regexp.MustCompile(`^(\d{4}\.\d{4,5})(?:v(\d{1,4}))?$`)
	// Old-style ids: archive[.SUB]/YYMMNNN.
	oldID = regexp.MustCompile(`^([a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v(\d{1,4}))?$`)
)

// prefixes are the forms around an id that Parse takes off, compared
// without regard to case.
var prefixes = []string{"https://arxiv.org/abs/", "http://arxiv.org/abs/", "https://arxiv.org/pdf/", "http://arxiv.org/pdf/", "arxiv.org/abs/", "arxiv:"}

// Parse splits an arXiv identifier into its id and version (0 when it has
// none). It takes "2202.02326", "2202.02326v2", the old form
// "astro-ph/9901001v1", an "arXiv:" prefix (any case), arxiv.org/abs/ and
// /pdf/ links, and refuses ids arXiv cannot have: a month outside 01-12,
// four digits after the dot from 1501 on or five before it, version 0 or
// more than four digits of version. An error's message says what is wrong
// and shows the input, shortened.
func Parse(s string) (id string, version int, err error) {
	s = strings.TrimSpace(s)
	for _, p := range prefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			s = s[len(p):]
			break
		}
	}
	s = strings.TrimSuffix(s, ".pdf")
	m := newID.FindStringSubmatch(s)
	if m != nil {
		yymm, _ := strconv.Atoi(m[1][:4])
		five := len(m[1]) == 10
		if yymm%100 < 1 || yymm%100 > 12 {
			return "", 0, fmt.Errorf("%q is not an arXiv id: its first four digits are the year and month (YYMM, e.g. 2202.02326), and %02d is no month", text.Truncate(s, 60), yymm%100)
		}
		if five != (yymm >= 1501) {
			return "", 0, fmt.Errorf("%q is not an arXiv id: ids have 4 digits after the dot until 1412 and 5 from 1501 (e.g. 2202.02326)", text.Truncate(s, 60))
		}
	} else {
		m = oldID.FindStringSubmatch(s)
	}
	if m == nil {
		return "", 0, fmt.Errorf("%q is not an arXiv id like 2202.02326, 2202.02326v2 or astro-ph/9901001", text.Truncate(s, 60))
	}
	if m[2] != "" {
		version, _ = strconv.Atoi(m[2])
		if version < 1 {
			return "", 0, fmt.Errorf("%q has version 0; versions start at v1", text.Truncate(s, 60))
		}
	}
	return m[1], version, nil
}

// Normalized says whether s has the shape of an id as Parse returns them
// (no version, no prefix), whatever its month or digits: what an earlier,
// looser release may have stored.
func Normalized(s string) bool {
	for _, re := range []*regexp.Regexp{newID, oldID} {
		if m := re.FindStringSubmatch(s); m != nil && m[2] == "" {
			return true
		}
	}
	return false
}
