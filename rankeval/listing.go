package rankeval

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"followfeed/harvest"
)

// Record is one paper of an astro-ph listing.
type Record struct {
	// ID is the arXiv id ("astro-ph/9804001", "0705.0001").
	ID    string
	Title string
	// Authors are the names of the Authors line, as harvest.SplitRawAuthors
	// splits them (affiliations dropped).
	Authors    []string
	Categories []string
}

// maxAuthors bounds the names read of one record.
const maxAuthors = 5000

// ParseListing reads one month's listing: records between lines "\\",
// each with a "Paper: <id>" or "arXiv:<id>" line and "Key: value" fields
// whose continuation lines are indented. Blocks without a Title (the
// file's head, the dashed separators) are skipped, as is a record whose
// id was seen before in the same listing.
func ParseListing(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var out []Record
	seen := map[string]bool{}
	fields := map[string]string{}
	var id, last string
	flush := func() {
		if id != "" && fields["Title"] != "" && !seen[id] {
			seen[id] = true
			out = append(out, Record{
				ID:         id,
				Title:      strings.Join(strings.Fields(fields["Title"]), " "),
				Authors:    harvest.SplitRawAuthors(fields["Authors"], maxAuthors),
				Categories: strings.Fields(fields["Categories"]),
			})
		}
		id, last = "", ""
		clear(fields)
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == `\\`:
			flush()
		case strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t"):
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		case strings.HasPrefix(line, "arXiv:"):
			// "arXiv:0712.2171 (*cross-listing*)"
			id, last = firstField(strings.TrimPrefix(line, "arXiv:")), ""
		default:
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.HasPrefix(k, "Paper") {
				// "Paper: astro-ph/9806001", "Paper (*cross-listing*): cond-mat/9806241"
				id, last = firstField(v), ""
				continue
			}
			if !ok || strings.ContainsAny(k, " \t") {
				last = ""
				continue
			}
			if _, dup := fields[k]; !dup {
				fields[k] = strings.TrimSpace(v)
				last = k
			} else {
				last = ""
			}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// loadMonth reads dir/<month>.
func loadMonth(dir string, m month) ([]Record, error) {
	f, err := os.Open(filepath.Join(dir, m.String()))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ParseListing(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return recs, nil
}

// month is a listing's month as the number of months since January 1900.
type month int

// parseMonth reads "YYMM" (92–99 are 1992–1999, others 2000–2091).
func parseMonth(s string) (month, error) {
	var yy, mm int
	if len(s) != 4 {
		return 0, fmt.Errorf("%q is not a month like 9806 (YYMM)", s)
	}
	if _, err := fmt.Sscanf(s, "%02d%02d", &yy, &mm); err != nil || mm < 1 || mm > 12 {
		return 0, fmt.Errorf("%q is not a month like 9806 (YYMM)", s)
	}
	year := 2000 + yy
	if yy >= 92 {
		year = 1900 + yy
	}
	return month((year-1900)*12 + mm - 1), nil
}

func (m month) String() string {
	return fmt.Sprintf("%02d%02d", (int(m)/12)%100, int(m)%12+1)
}
