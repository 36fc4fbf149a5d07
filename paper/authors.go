package paper

import (
	"encoding/json"
	"unicode/utf8"
)

// DecodeAuthors decodes a paper's authors from JSON (an array of
// {"name", "ids"} objects, as the papers table's authors column holds them)
// with the result and error json.Unmarshal into a []Author would give, for
// any input.
//
// It reads the text PostgreSQL writes for a jsonb array of authors
// (`[{"ids": ["s2:17"], "name": "Ann One"}]`: keys exactly "ids" and
// "name", strings without escapes) itself, all the strings of one array
// sharing one copy of data; anything else (an escape, another key, a
// null, a number) goes to encoding/json. Every surface that lists papers
// loads their authors: encoding/json took some 3 µs for four of them,
// this 0.6 µs (BenchmarkDecodeAuthors).
func DecodeAuthors(data []byte) ([]Author, error) {
	if as, ok := decodeAuthorsFast(data); ok {
		return as, nil
	}
	var as []Author
	err := json.Unmarshal(data, &as)
	return as, err
}

// decodeAuthorsFast decodes data when it has the shape jsonb writes (see
// DecodeAuthors); ok is false, and the result nothing, otherwise.
func decodeAuthorsFast(data []byte) (out []Author, ok bool) {
	d := authorsDecoder{s: string(data)}
	out = []Author{}
	if !d.list(func() bool {
		a, ok := d.author()
		out = append(out, a)
		return ok
	}) || !d.end() {
		return nil, false
	}
	return out, true
}

// authorsDecoder reads s from i on; every string it returns is a
// substring of s.
type authorsDecoder struct {
	s string
	i int
}

// space skips JSON white space.
func (d *authorsDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte skips white space and then c, reporting whether c was there (and
// skipped).
func (d *authorsDecoder) byte(c byte) bool {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *authorsDecoder) end() bool {
	d.space()
	return d.i == len(d.s)
}

// str reads a string without escapes or control characters, in valid
// UTF-8 (what encoding/json would return unchanged).
func (d *authorsDecoder) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start, ascii := d.i, true
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; {
		case c == '"':
			v := d.s[start:d.i]
			d.i++
			return v, ascii || utf8.ValidString(v)
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// author reads one {"ids": [...], "name": "..."} object, its keys in
// any order, either missing.
func (d *authorsDecoder) author() (a Author, ok bool) {
	if !d.byte('{') {
		return a, false
	}
	if d.byte('}') {
		return a, true
	}
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return a, false
		}
		switch key {
		case "name":
			if a.Name, ok = d.str(); !ok {
				return a, false
			}
		case "ids":
			if a.IDs, ok = d.ids(); !ok {
				return a, false
			}
		default:
			return a, false
		}
		if d.byte('}') {
			return a, true
		}
		if !d.byte(',') {
			return a, false
		}
	}
}

// ids reads an array of strings ([] is an empty, non-nil slice, as
// encoding/json makes it).
func (d *authorsDecoder) ids() ([]string, bool) {
	ids := []string{}
	if !d.list(func() bool {
		id, ok := d.str()
		ids = append(ids, id)
		return ok
	}) {
		return nil, false
	}
	return ids, true
}

// list reads an array, each of its elements by elem, reporting whether
// the array and every element were read.
func (d *authorsDecoder) list(elem func() bool) bool {
	if !d.byte('[') {
		return false
	}
	if d.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.byte(']') {
			return true
		}
		if !d.byte(',') {
			return false
		}
	}
}
