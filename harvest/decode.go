package harvest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/internal/text"
	"followfeed/paper"
)

// MaxPushBytes is the largest push-ingest body accepted.
const MaxPushBytes = 20 << 20

// pushedPaper is one paper in the host site's shape (see the README's
// "POST /v1/papers"). Fields the host sends that we do not use (slug,
// cited_by_count, …) are ignored: the one body not read strictly, since a
// host pushes its own records, which carry more than followfeed reads.
type pushedPaper struct {
	ArxivID         string          `json:"arxiv_id"`
	Version         int             `json:"version"`
	Title           string          `json:"title"`
	Abstract        string          `json:"abstract"`
	Authors         json.RawMessage `json:"authors"`
	Categories      []string        `json:"categories"`
	PrimaryCategory string          `json:"primary_category"`
	Institutions    []string        `json:"institutions"`
	DOI             string          `json:"doi"`
	JournalRef      string          `json:"journal_ref"`
	Comments        string          `json:"comments"`
	Published       string          `json:"published"`
	Updated         string          `json:"updated"`
	AbsURL          string          `json:"abs_url"`
	PDFURL          string          `json:"pdf_url"`
}

// DecodePush reads a push-ingest body: a JSON array of papers, or NDJSON
// (one paper object per line). It reads at most MaxPushBytes and MaxBatch
// papers. A body that cannot be read at all is an apperr.BadRequest (or
// TooLarge); records that are JSON but not papers are reported one by one,
// by index and field, as an apperr.Invalid with Details.
func DecodePush(r io.Reader) ([]paper.Paper, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxPushBytes+1), 64<<10)
	first, err := peekNonSpace(br)
	if err == io.EOF {
		return nil, apperr.New(apperr.BadRequest, "the body is empty; send a JSON array of papers or NDJSON")
	}
	if err != nil {
		return nil, readErr(err)
	}
	var raws []json.RawMessage
	switch first {
	case '[':
		raws, err = splitArray(br)
	case '{':
		raws, err = splitLines(br)
	default:
		return nil, apperr.New(apperr.BadRequest, "the body must be a JSON array of papers or NDJSON (one JSON object per line)")
	}
	if err != nil {
		return nil, err
	}
	if len(raws) > catalog.MaxBatch {
		return nil, apperr.New(apperr.TooLarge, "at most %d papers per request; split the batch", catalog.MaxBatch)
	}
	papers := make([]paper.Paper, 0, len(raws))
	var problems []apperr.Detail
	for i, raw := range raws {
		p, fe := decodeOne(raw)
		if fe != nil {
			problems = append(problems, apperr.Detail{Index: i, Field: fe.Field, Reason: fe.Reason})
			continue
		}
		papers = append(papers, p)
	}
	if len(problems) > 0 {
		return nil, &apperr.Error{Code: apperr.Invalid, Details: problems,
			Message: fmt.Sprintf("%d of %d papers are invalid; nothing was stored (see errors)", len(problems), len(raws))}
	}
	return papers, nil
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' && b != 0xEF && b != 0xBB && b != 0xBF { // BOM tolerated
			return b, br.UnreadByte()
		}
	}
}

// readErr turns a read failure into a client error: too large, or broken.
func readErr(err error) error {
	var tooBig *tooLargeError
	if errors.As(err, &tooBig) {
		return apperr.New(apperr.TooLarge, "the body exceeds %d MiB; split the batch", MaxPushBytes>>20)
	}
	// The cause stays in the chain: the HTTP layer finds an
	// *http.MaxBytesError there and answers 413.
	return &apperr.Error{Code: apperr.BadRequest, Message: fmt.Sprintf("reading the body: %v", err), Err: err}
}

type tooLargeError struct{}

func (*tooLargeError) Error() string { return "body too large" }

func splitArray(br *bufio.Reader) ([]json.RawMessage, error) {
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, readErr(err)
	}
	if len(data) > MaxPushBytes {
		return nil, readErr(&tooLargeError{})
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '['
		return nil, apperr.New(apperr.BadRequest, "the body is not valid JSON: %v", err)
	}
	var out []json.RawMessage
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, apperr.New(apperr.BadRequest, "the body is not valid JSON after %d papers: %v", len(out), err)
		}
		out = append(out, raw)
		if len(out) > catalog.MaxBatch {
			return out, nil
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, apperr.New(apperr.BadRequest, "the body is not valid JSON: the array is not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apperr.New(apperr.BadRequest, "the body has data after the JSON array")
	}
	return out, nil
}

func splitLines(br *bufio.Reader) ([]json.RawMessage, error) {
	var out []json.RawMessage
	total := 0
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		total += len(b)
		if total > MaxPushBytes {
			return nil, readErr(&tooLargeError{})
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			if !json.Valid(t) {
				return nil, apperr.New(apperr.BadRequest, "NDJSON line %d is not valid JSON", line)
			}
			out = append(out, json.RawMessage(t))
			if len(out) > catalog.MaxBatch {
				return out, nil
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, readErr(err)
		}
	}
}

func decodeOne(raw json.RawMessage) (paper.Paper, *paper.FieldError) {
	var pp pushedPaper
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&pp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return paper.Paper{}, &paper.FieldError{Field: te.Field, Reason: fmt.Sprintf("must be a JSON %s", jsonKind(te.Type.String()))}
		}
		return paper.Paper{}, &paper.FieldError{Field: "", Reason: "each paper must be a JSON object"}
	}
	p := paper.Paper{
		ArxivID: pp.ArxivID, Version: pp.Version, Title: pp.Title, Abstract: pp.Abstract,
		PrimaryCategory: pp.PrimaryCategory, Categories: pp.Categories, Institutions: pp.Institutions,
		DOI: pp.DOI, JournalRef: pp.JournalRef, Comments: pp.Comments, AbsURL: pp.AbsURL, PDFURL: pp.PDFURL,
	}
	if p.ArxivID == "" {
		return paper.Paper{}, &paper.FieldError{Field: "arxiv_id", Reason: "is required (e.g. 2202.02326 or 2202.02326v2)"}
	}
	authors, fe := decodeAuthors(pp.Authors)
	if fe != nil {
		return paper.Paper{}, fe
	}
	p.Authors = authors
	var err error
	if p.SubmittedAt, err = parseDate(pp.Published); err != nil {
		return paper.Paper{}, &paper.FieldError{Field: "published", Reason: err.Error()}
	}
	if p.UpdatedAt, err = parseDate(pp.Updated); err != nil {
		return paper.Paper{}, &paper.FieldError{Field: "updated", Reason: err.Error()}
	}
	if fe := p.Normalize(true); fe != nil {
		return paper.Paper{}, fe
	}
	return p, nil
}

// decodeAuthors accepts [{"name": …, "ids": […]}], ["Name", …] or the host's
// plain "A, B and C" string.
func decodeAuthors(raw json.RawMessage) ([]paper.Author, *paper.FieldError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &paper.FieldError{Field: "authors", Reason: "must be a string or an array"}
		}
		var out []paper.Author
		for _, n := range SplitAuthorNames(s) {
			out = append(out, paper.Author{Name: n})
		}
		return out, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, &paper.FieldError{Field: "authors", Reason: "must be an array of authors"}
		}
		out := make([]paper.Author, 0, len(items))
		for i, it := range items {
			var a paper.Author
			if len(it) > 0 && it[0] == '"' {
				if err := json.Unmarshal(it, &a.Name); err != nil {
					return nil, &paper.FieldError{Field: fmt.Sprintf("authors[%d]", i), Reason: "must be a name or an object"}
				}
			} else if err := json.Unmarshal(it, &a); err != nil {
				return nil, &paper.FieldError{Field: fmt.Sprintf("authors[%d]", i), Reason: `must be {"name": "…", "ids": ["openalex:A…"]} or a name`}
			}
			out = append(out, a)
		}
		return out, nil
	default:
		return nil, &paper.FieldError{Field: "authors", Reason: "must be a string or an array"}
	}
}

// SplitAuthorNames splits an author list written as prose: "A, B, and C",
// "A and B", "A; B".
func SplitAuthorNames(s string) []string {
	s = strings.ReplaceAll(s, ";", ",")
	var out []string
	for _, part := range strings.Split(s, ",") {
		for _, n := range strings.Split(part, " and ") {
			n = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(n), "and "))
			if n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// The dates a pushed paper may carry: from arXiv's first year to two
// days ahead of this machine's clock (time zones, a host's clock a little
// ahead). A date outside is a mistake: a paper "published" in 3026 stayed
// first in every feed of its category, and 0001-01-01 read as no date.
var (
	earliestDate = time.Date(1991, 1, 1, 0, 0, 0, 0, time.UTC)
	aheadAllowed = 48 * time.Hour
)

// parseDate reads a pushed paper's date (RFC 3339, or a date and time
// without a zone, read as UTC, or a date); "" is none. A date before 1991
// or more than two days ahead is an error saying so.
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		t = t.UTC()
		if latest := time.Now().UTC().Add(aheadAllowed); t.Before(earliestDate) || t.After(latest) {
			return time.Time{}, fmt.Errorf("%q is not a date a paper can have: it must be from 1991 (arXiv's first year) to %s", text.Truncate(s, 40), latest.Format("2006-01-02"))
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date like 2022-02-04 or 2022-02-04T00:00:00Z", text.Truncate(s, 40))
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case goType == "string":
		return "string"
	case strings.HasPrefix(goType, "int"):
		return "integer"
	case strings.HasPrefix(goType, "float"):
		return "number"
	default:
		return "value of the documented type"
	}
}
