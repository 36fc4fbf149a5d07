// Package identity is the registry of researchers and institutions: each is
// one record (an identity) with a display name, other names and every id it
// is known by ("openalex:A…", "orcid:…", "s2:…", "host:…"; "ror:…",
// "openalex:I…"). It is the one writer of identities, identity_keys,
// identity_splits and identity_disputes.
//
// Ids are linked by the host (Registry.Put), by OpenAlex enrichment (an
// author's OpenAlex id and ORCID, an institution's OpenAlex id and ROR id)
// and by pushed papers (ids listed on one author are one person, through
// Registry.ObservePapers). A record whose ids belong to two identities
// merges them; Registry.Split takes an id off again. Follows and paper keys
// keep one id each: package match expands a key to all keys of its
// identity when it reads, so a link made today reaches papers stored
// before it (see docs/ARCHITECTURE.md, "Identity").
package identity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/internal/text"
)

// Limits of one Put.
const (
	// MaxBatch is the most records one Put (PUT /v1/researchers) accepts.
	MaxBatch = 10_000
	// MaxBodyBytes is the largest request body DecodeRecords reads.
	MaxBodyBytes = 16 << 20
	// MaxName is the longest name (in characters) a record may carry.
	MaxName = 300
	// MaxIDs is the most ids one record may list.
	MaxIDs = 50
	// MaxOtherNames is the most other names an identity keeps.
	MaxOtherNames = 50
)

// Source says who linked ids or named an identity. A name from a source of
// a higher rank replaces one from a lower rank: host over openalex over
// paper.
type Source string

// The sources.
const (
	SourceHost     Source = "host"
	SourceOpenAlex Source = "openalex"
	SourcePaper    Source = "paper"
)

func (s Source) rank() int {
	switch s {
	case SourceHost:
		return 3
	case SourceOpenAlex:
		return 2
	case SourcePaper:
		return 1
	}
	return 0
}

// Record is one identity as a source describes it. IDs are normalised ids
// of Kind (follow.ParseResearcherID / ParseInstitutionID forms).
type Record struct {
	Kind       follow.Kind
	IDs        []string
	Name       string
	OtherNames []string
	// Country is an institution's ISO 3166-1 alpha-2 code ("US"), or "".
	Country string
}

// keys are the match keys of r's ids.
func (r Record) keys() []string {
	out := make([]string, len(r.IDs))
	for i, id := range r.IDs {
		out[i] = follow.Target{Kind: r.Kind, ID: id}.Key()
	}
	return out
}

// hostRecord is a record as the host sends it.
type hostRecord struct {
	IDs        []string `json:"ids"`
	Name       *string  `json:"name"`
	OtherNames []string `json:"other_names"`
	Country    *string  `json:"country"`
}

// DecodeRecords reads a PUT /v1/researchers or /v1/institutions body of
// records of kind: a JSON array of objects, or NDJSON (one object per
// line), at most MaxBatch records and MaxBodyBytes. A body that cannot be
// read is an apperr.BadRequest (or TooLarge); every record that is not
// valid is reported in one apperr.Invalid whose Details name the record
// (index) and field ("ids[1]", "name"), so nothing of a rejected batch is
// written. An id given to two records of the batch is a problem of the
// later one.
func DecodeRecords(kind follow.Kind, r io.Reader) ([]Record, error) {
	raws, err := splitBody(r)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, apperr.New(apperr.BadRequest, "the body has no records; send a JSON array of records or NDJSON")
	}
	if len(raws) > MaxBatch {
		return nil, apperr.New(apperr.TooLarge, "at most %d records per request; split the batch", MaxBatch)
	}
	recs := make([]Record, 0, len(raws))
	var problems []apperr.Detail
	owner := map[string]int{} // key -> index of the record that gave it
	for i, raw := range raws {
		rec, field, reason := decodeRecord(kind, raw)
		if reason != "" {
			problems = append(problems, apperr.Detail{Index: i, Field: field, Reason: reason})
			continue
		}
		for j, k := range rec.keys() {
			if prev, dup := owner[k]; dup {
				problems = append(problems, apperr.Detail{Index: i, Field: fmt.Sprintf("ids[%d]", j),
					Reason: fmt.Sprintf("%s is also an id of record %d of this batch; one id belongs to one %s (merge the two records)", rec.IDs[j], prev, kind)})
				break
			}
			owner[k] = i
		}
		recs = append(recs, rec)
	}
	if len(problems) > 0 {
		return nil, &apperr.Error{Code: apperr.Invalid, Details: problems,
			Message: fmt.Sprintf("%d of %d records are invalid; nothing was stored (see errors)", len(problems), len(raws))}
	}
	return recs, nil
}

// decodeRecord reads and validates one record; reason is "" when it is
// valid.
func decodeRecord(kind follow.Kind, raw json.RawMessage) (rec Record, field, reason string) {
	var hr hostRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hr); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return rec, te.Field, "has the wrong type: expected " + te.Type.String()
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return rec, f, "is not a field of a record; the fields are ids, name, other_names and country"
		}
		return rec, "", "is not a JSON object"
	}
	rec.Kind = kind
	if len(hr.IDs) == 0 {
		return rec, "ids", "a record needs at least one id, such as " + exampleID(kind)
	}
	if len(hr.IDs) > MaxIDs {
		return rec, "ids", fmt.Sprintf("a record may list at most %d ids", MaxIDs)
	}
	for j, s := range hr.IDs {
		id, err := parseID(kind, s)
		if err != nil {
			msg := err.Error()
			if ae, ok := apperr.As(err); ok {
				msg = ae.Message
			}
			return rec, fmt.Sprintf("ids[%d]", j), msg
		}
		if !slices.Contains(rec.IDs, id) {
			rec.IDs = append(rec.IDs, id)
		}
	}
	if hr.Name != nil {
		n, ok := cleanName(*hr.Name)
		if !ok {
			return rec, "name", fmt.Sprintf("a name has at most %d characters of valid UTF-8", MaxName)
		}
		rec.Name = n
	}
	if len(hr.OtherNames) > MaxOtherNames {
		return rec, "other_names", fmt.Sprintf("at most %d other names", MaxOtherNames)
	}
	for j, s := range hr.OtherNames {
		n, ok := cleanName(s)
		if !ok {
			return rec, fmt.Sprintf("other_names[%d]", j), fmt.Sprintf("a name has at most %d characters of valid UTF-8", MaxName)
		}
		if n != "" && n != rec.Name && !slices.Contains(rec.OtherNames, n) {
			rec.OtherNames = append(rec.OtherNames, n)
		}
	}
	if hr.Country != nil && *hr.Country != "" {
		if kind != follow.Institution {
			return rec, "country", "only institutions have a country"
		}
		c, ok := cleanCountry(*hr.Country)
		if !ok {
			return rec, "country", "a country is a two-letter ISO 3166-1 code such as US or DE"
		}
		rec.Country = c
	}
	return rec, "", ""
}

// ParseID normalises an id of kind (researcher or institution), as
// follow.ParseResearcherID and ParseInstitutionID do; any other kind is an
// apperr.Invalid naming the kinds the registry holds.
func ParseID(kind follow.Kind, s string) (string, error) { return parseID(kind, s) }

func parseID(kind follow.Kind, s string) (string, error) {
	switch kind {
	case follow.Researcher:
		return follow.ParseResearcherID(s)
	case follow.Institution:
		return follow.ParseInstitutionID(s)
	}
	return "", apperr.InvalidField("kind", "the registry holds researchers and institutions, not %ss", kind)
}

func exampleID(kind follow.Kind) string {
	if kind == follow.Institution {
		return `"ror:03dbr7087"`
	}
	return `"openalex:A5023888391"`
}

// cleanName is s as text.Collapse stores names (bidirectional controls
// removed, whitespace and line separators collapsed); false when s is not
// valid UTF-8, has control characters or is longer than MaxName.
func cleanName(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return "", false
		}
	}
	n := text.Collapse(s, -1) // no bidirectional control, one line
	return n, utf8.RuneCountInString(n) <= MaxName
}

func cleanCountry(s string) (string, bool) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return "", false
	}
	return c, true
}

// splitBody splits a JSON array or NDJSON body into its records.
func splitBody(r io.Reader) ([]json.RawMessage, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		// The cause stays in the chain: the HTTP layer finds an
		// *http.MaxBytesError there (its cap) and answers 413.
		return nil, &apperr.Error{Code: apperr.BadRequest, Message: "reading the body failed", Err: err}
	}
	if len(data) > MaxBodyBytes {
		return nil, apperr.New(apperr.TooLarge, "the body exceeds %d MiB; split the batch", MaxBodyBytes>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, apperr.New(apperr.BadRequest, "the body is empty; send a JSON array of records or NDJSON")
	}
	switch trimmed[0] {
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, apperr.New(apperr.BadRequest, "the body is not valid JSON (at byte %d)", se.Offset)
			}
			return nil, apperr.New(apperr.BadRequest, "the body is not a JSON array of records")
		}
		return raws, nil
	case '{':
		var raws []json.RawMessage
		sc := bufio.NewScanner(bytes.NewReader(trimmed))
		sc.Buffer(make([]byte, 0, 64<<10), MaxBodyBytes)
		for line := 1; sc.Scan(); line++ {
			t := bytes.TrimSpace(sc.Bytes())
			if len(t) == 0 {
				continue
			}
			if !json.Valid(t) {
				return nil, apperr.New(apperr.BadRequest, "NDJSON line %d is not valid JSON", line)
			}
			raws = append(raws, json.RawMessage(bytes.Clone(t)))
			if len(raws) > MaxBatch {
				break
			}
		}
		if err := sc.Err(); err != nil {
			return nil, apperr.New(apperr.BadRequest, "reading the body: %v", err)
		}
		return raws, nil
	}
	return nil, apperr.New(apperr.BadRequest, "the body must be a JSON array of records or NDJSON (one JSON object per line)")
}
