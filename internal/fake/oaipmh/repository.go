// Package oaipmh holds the fake arXiv OAI-PMH repositories of tests and the
// soak: Repository serves generated records in arXivRaw with resumption
// tokens and planned faults; Replay serves recorded responses.
package oaipmh

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record is one arXiv record a Repository serves.
type Record struct {
	ID         string
	Version    int // the highest version; the record lists v1..Version
	Title      string
	Authors    []string
	Categories []string // primary first
	Datestamp  string   // YYYY-MM-DD
}

// Faults a Repository can inject (Plan); the values are their names in reports.
const (
	Fault500       = "HTTP 500"
	Fault503       = "HTTP 503 with Retry-After: 1"
	FaultHang      = "response hung past the job timeout"
	FaultTruncated = "truncated body"
	FaultInvalid   = "invalid XML"
	FaultBadToken  = "badResumptionToken"
)

// Repository serves ListRecords in arXivRaw format, pageSize records per page,
// with resumption tokens. The record list may grow (records is called for
// every new run); a token pins the list size of its run. Plan sets the
// sequence of faults for a page's successive requests. Set the exported
// fields before it serves.
type Repository struct {
	// Delay is slept before every response.
	Delay time.Duration
	// Hang is how long FaultHang holds the response.
	Hang time.Duration
	// OnServe, when set, is called after each page served without a
	// fault (FaultHang included) with the page number and the total so far.
	OnServe func(page, total int)

	records  func() []Record
	pageSize int

	mu       sync.Mutex
	faults   map[int][]string
	requests map[int]int // page → requests seen
	served   map[int]int // page → complete pages served
	injected map[string]int
	total    int            // pages served
	omit     map[string]int // record id → ListRecords runs still to leave it out of
	withheld map[string]bool
	idLists  int      // ListIdentifiers requests served
	idFaults []string // faults of the next ListIdentifiers requests
}

// New returns a repository serving records() (called for every new run),
// pageSize records per page.
func New(records func() []Record, pageSize int) *Repository {
	return &Repository{records: records, pageSize: pageSize, faults: map[int][]string{},
		requests: map[int]int{}, served: map[int]int{}, injected: map[string]int{}, omit: map[string]int{}}
}

// Omit makes the next runs ListRecords records without ids, as a repository
// that drops records from a list would: each id is left out of that many
// runs (a first page without until). ListIdentifiers and day-bounded
// ListRecords (until set, as a re-harvest asks) still have them.
func (f *Repository) Omit(runs int, ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.omit[id] = runs
	}
}

// Withhold makes every ListRecords response leave ids out (nil restores
// them), while ListIdentifiers still lists them: records the repository
// counts but cannot serve.
func (f *Repository) Withhold(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withheld = map[string]bool{}
	for _, id := range ids {
		f.withheld[id] = true
	}
}

// IdentifierLists returns how many ListIdentifiers requests were served.
func (f *Repository) IdentifierLists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idLists
}

// listed is the records of a regular ListRecords run: all but those
// omitted. newRun consumes one omission of each.
func (f *Repository) listed(newRun bool) []Record {
	all := f.records()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.omit) == 0 && len(f.withheld) == 0 {
		return all
	}
	out := make([]Record, 0, len(all))
	for _, r := range all {
		if f.omit[r.ID] > 0 || f.withheld[r.ID] {
			continue
		}
		out = append(out, r)
	}
	if newRun {
		for id, n := range f.omit {
			if n <= 1 {
				delete(f.omit, id)
			} else {
				f.omit[id] = n - 1
			}
		}
	}
	return out
}

// between is the records whose datestamp lies in [from, until] (either
// bound may be empty).
func (f *Repository) between(from, until string) []Record {
	var out []Record
	for _, r := range f.records() {
		if (from == "" || r.Datestamp >= from) && (until == "" || r.Datestamp <= until) {
			out = append(out, r)
		}
	}
	return out
}

// Plan makes the successive requests for page (0 is the first) answer
// faults, in order; later requests are served normally. FaultBadToken only
// applies to requests with a resumption token.
func (f *Repository) Plan(page int, faults ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[page] = faults
}

// PlanIdentifiers makes the next ListIdentifiers requests answer faults,
// in order (FaultBadToken waits for a request with a resumption token);
// later requests are served normally.
// FaultCounts names them "ListIdentifiers: <fault>".
func (f *Repository) PlanIdentifiers(faults ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idFaults = faults
}

// ServedPages returns how many pages were served without a fault.
func (f *Repository) ServedPages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

// FaultCounts returns how often each fault was injected.
func (f *Repository) FaultCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.injected {
		out[k] = v
	}
	return out
}

// ServeHTTP answers ListRecords (first page by metadataPrefix, later ones
// by resumptionToken), injecting the planned fault of the request if any.
func (f *Repository) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("verb") == "ListIdentifiers":
		f.listIdentifiers(w, r)
		return
	case q.Get("verb") == "ListRecords" && q.Get("until") != "" && q.Get("resumptionToken") == "":
		f.listDay(w, q.Get("from"), q.Get("until"))
		return
	case q.Get("verb") != "ListRecords":
		f.oaiError(w, "badVerb", "only ListRecords and ListIdentifiers are implemented")
		return
	}
	page, size := 0, 0
	if tok := q.Get("resumptionToken"); tok != "" {
		var err error
		page, size, err = parseToken(tok)
		if err != nil {
			f.oaiError(w, "badResumptionToken", "unknown token")
			return
		}
	} else {
		if q.Get("metadataPrefix") != "arXivRaw" {
			f.oaiError(w, "cannotDisseminateFormat", "only arXivRaw")
			return
		}
		size = len(f.listed(true))
	}
	f.mu.Lock()
	f.requests[page]++
	n := f.requests[page]
	fault := ""
	if fs := f.faults[page]; n <= len(fs) {
		fault = fs[n-1]
	}
	if fault == FaultBadToken && q.Get("resumptionToken") == "" {
		fault = ""
	}
	if fault != "" {
		f.injected[fault]++
	}
	f.mu.Unlock()

	if f.Delay > 0 && !sleepCtx(r, f.Delay) {
		return
	}
	if f.fail(w, r, fault) {
		return
	}
	body := f.page(page, size)
	if fault == FaultTruncated {
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = w.Write(body)
	if fault == "" || fault == FaultHang {
		f.mu.Lock()
		f.served[page]++
		f.total++
		total, cb := f.total, f.OnServe
		f.mu.Unlock()
		if cb != nil {
			cb(page, total)
		}
	}
}

// fail answers a fault and returns true, or returns false for the caller
// to serve the response: after holding it for Hang (FaultHang), to be
// truncated (FaultTruncated), or without a fault.
func (f *Repository) fail(w http.ResponseWriter, r *http.Request, fault string) bool {
	switch fault {
	case Fault500:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return true
	case Fault503:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return true
	case FaultHang:
		return !sleepCtx(r, f.Hang)
	case FaultBadToken:
		f.oaiError(w, "badResumptionToken", "The value of the resumptionToken argument is invalid or expired.")
		return true
	case FaultInvalid:
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords><record></ListRecords></OAI-PMH>`))
		return true
	}
	return false
}

// sleepCtx waits d or until the client goes away (false).
func sleepCtx(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func parseToken(tok string) (page, size int, err error) {
	var p, s int
	if _, err := fmt.Sscanf(tok, "soak-p%d-n%d", &p, &s); err != nil || p < 1 || s < 0 {
		return 0, 0, fmt.Errorf("bad token %q", tok)
	}
	return p, s, nil
}

func (f *Repository) oaiError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
<responseDate>%s</responseDate>
<request verb="ListRecords">http://export.arxiv.org/oai2</request>
<error code="%s">%s</error>
</OAI-PMH>
`, time.Now().UTC().Format(time.RFC3339), code, esc(msg))
}

// page renders page number page of a list of size records.
func (f *Repository) page(page, size int) []byte {
	all := f.listed(false)
	size = min(size, len(all))
	if size == 0 {
		var b bytes.Buffer
		fw := httpBuffer{&b}
		f.oaiError(fw, "noRecordsMatch", "The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.")
		return b.Bytes()
	}
	from := page * f.pageSize
	to := min(from+f.pageSize, size)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
<responseDate>%s</responseDate>
<request verb="ListRecords" metadataPrefix="arXivRaw">http://export.arxiv.org/oai2</request>
<ListRecords>
`, time.Now().UTC().Format(time.RFC3339))
	for _, rec := range all[min(from, size):to] {
		writeRecord(&b, rec)
	}
	if to < size {
		fmt.Fprintf(&b, "<resumptionToken cursor=\"%d\" completeListSize=\"%d\">soak-p%d-n%d</resumptionToken>\n", from, size, page+1, size)
	} else if page > 0 {
		fmt.Fprintf(&b, "<resumptionToken cursor=\"%d\" completeListSize=\"%d\"></resumptionToken>\n", from, size)
	}
	b.WriteString("</ListRecords>\n</OAI-PMH>\n")
	return b.Bytes()
}

// listIdentifiers answers ListIdentifiers with the records in [from,
// until], pageSize headers per page; a resumption token
// ("ids.<from>.<until>.<page>") carries the bounds and the next page.
func (f *Repository) listIdentifiers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, until, token := q.Get("from"), q.Get("until"), q.Get("resumptionToken")
	f.mu.Lock()
	f.idLists++
	fault := ""
	if len(f.idFaults) > 0 && (f.idFaults[0] != FaultBadToken || token != "") {
		fault, f.idFaults = f.idFaults[0], f.idFaults[1:]
		f.injected["ListIdentifiers: "+fault]++
	}
	f.mu.Unlock()
	if f.fail(w, r, fault) {
		return
	}
	page := 0
	if token != "" {
		var ok bool
		if from, until, page, ok = parseIDToken(token); !ok {
			f.oaiError(w, "badResumptionToken", "unknown token")
			return
		}
	}
	recs := f.between(from, until)
	if len(recs) == 0 {
		f.oaiError(w, "noRecordsMatch", "The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.")
		return
	}
	first := min(page*f.pageSize, len(recs))
	last := min(first+f.pageSize, len(recs))
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
<responseDate>%s</responseDate>
<request verb="ListIdentifiers" metadataPrefix="arXivRaw">http://export.arxiv.org/oai2</request>
<ListIdentifiers>
`, time.Now().UTC().Format(time.RFC3339))
	for _, r := range recs[first:last] {
		fmt.Fprintf(&b, "<header>\n <identifier>oai:arXiv.org:%s</identifier>\n <datestamp>%s</datestamp>\n <setSpec>cs</setSpec>\n</header>\n", esc(r.ID), esc(r.Datestamp))
	}
	switch {
	case last < len(recs):
		fmt.Fprintf(&b, "<resumptionToken cursor=\"%d\" completeListSize=\"%d\">ids.%s.%s.%d</resumptionToken>\n", first, len(recs), from, until, page+1)
	case page > 0:
		fmt.Fprintf(&b, "<resumptionToken cursor=\"%d\" completeListSize=\"%d\"></resumptionToken>\n", first, len(recs))
	}
	b.WriteString("</ListIdentifiers>\n</OAI-PMH>\n")
	body := b.Bytes()
	if fault == FaultTruncated {
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = w.Write(body)
}

// parseIDToken reads a ListIdentifiers token: "ids.<from>.<until>.<page>".
func parseIDToken(tok string) (from, until string, page int, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 4 || parts[0] != "ids" {
		return "", "", 0, false
	}
	page, err := strconv.Atoi(parts[3])
	return parts[1], parts[2], page, err == nil && page >= 1
}

// listDay answers a day-bounded ListRecords (until set) with every record
// in [from, until], in one page, omissions and faults aside.
func (f *Repository) listDay(w http.ResponseWriter, from, until string) {
	var recs []Record
	f.mu.Lock()
	withheld := f.withheld
	f.mu.Unlock()
	for _, r := range f.between(from, until) {
		if !withheld[r.ID] {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		f.oaiError(w, "noRecordsMatch", "The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.")
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>%s</responseDate>
<request verb="ListRecords" metadataPrefix="arXivRaw">http://export.arxiv.org/oai2</request>
<ListRecords>
`, time.Now().UTC().Format(time.RFC3339))
	for _, rec := range recs {
		writeRecord(&b, rec)
	}
	b.WriteString("</ListRecords>\n</OAI-PMH>\n")
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// httpBuffer lets oaiError write into a buffer.
type httpBuffer struct{ b *bytes.Buffer }

func (h httpBuffer) Header() http.Header         { return http.Header{} }
func (h httpBuffer) Write(p []byte) (int, error) { return h.b.Write(p) }
func (h httpBuffer) WriteHeader(int)             {}

func writeRecord(b *bytes.Buffer, r Record) {
	fmt.Fprintf(b, "<record>\n<header>\n <identifier>oai:arXiv.org:%s</identifier>\n <datestamp>%s</datestamp>\n <setSpec>cs</setSpec>\n</header>\n<metadata>\n",
		esc(r.ID), esc(r.Datestamp))
	b.WriteString(` <arXivRaw xmlns="http://arxiv.org/OAI/arXivRaw/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://arxiv.org/OAI/arXivRaw/ http://arxiv.org/OAI/arXivRaw.xsd">`)
	fmt.Fprintf(b, "\n <id>%s</id><submitter>%s</submitter>", esc(r.ID), esc(r.Authors[0]))
	day, _ := time.Parse(time.DateOnly, r.Datestamp)
	for v := 1; v <= max(r.Version, 1); v++ {
		at := day.Add(-time.Duration(r.Version-v+1) * 24 * time.Hour).Add(9 * time.Hour)
		fmt.Fprintf(b, `<version version="v%d"><date>%s</date><size>%dkb</size></version>`, v, at.UTC().Format("Mon, 2 Jan 2006 15:04:05 GMT"), 100+v)
	}
	fmt.Fprintf(b, "<title>%s</title><authors>%s</authors><categories>%s</categories><comments>%d pages</comments><abstract>  %s\n</abstract></arXivRaw>\n</metadata>\n</record>\n",
		esc(r.Title), esc(rawAuthors(r.Authors)), esc(strings.Join(r.Categories, " ")), 8+len(r.ID)%9,
		esc("We report a soak-test record "+r.ID+" and measure it carefully across versions."))
}

// rawAuthors writes names as arXivRaw does: "A, B and C".
func rawAuthors(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// MakeRecords builds n records with ids prefix.00001…, categories cycled
// through cats (every fourth cross-listed to the next one), versions 1–3,
// two or three authors each, all with datestamp day.
func MakeRecords(prefix string, first, n int, cats []string, day string) []Record {
	out := make([]Record, 0, n)
	for i := first; i < first+n; i++ {
		c := cats[i%len(cats)]
		r := Record{
			ID:         fmt.Sprintf("%s.%05d", prefix, i+1),
			Version:    1 + i%3,
			Title:      "Soak record " + strconv.Itoa(i+1) + " on " + c,
			Authors:    []string{fmt.Sprintf("Ada Soak%d", i%97), fmt.Sprintf("Bo Tester%d", i%89)},
			Categories: []string{c},
			Datestamp:  day,
		}
		if i%2 == 0 {
			r.Authors = append(r.Authors, fmt.Sprintf("Cy Rivera%d", i%83))
		}
		if i%4 == 1 {
			r.Categories = append(r.Categories, cats[(i+1)%len(cats)])
		}
		out = append(out, r)
	}
	return out
}
