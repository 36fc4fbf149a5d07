package paper

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// jsonbAuthors are texts in the shapes jsonb writes: DecodeAuthors's
// fast path reads them.
var jsonbAuthors = []string{
	// What the papers table holds (jsonb's text).
	`[{"ids": ["s2:466"], "name": "Researcher 466"}, {"ids": ["s2:426", "orcid:0000-0002-1825-0097"], "name": "Researcher 426"}]`,
	`[{"name": "Ann One"}]`,
	`[{"ids": [], "name": "No Ids"}]`,
	`[]`,
	`[{}]`,
	`[{"name": "Jürgen Müller"}, {"name": "张伟", "ids": ["host:7"]}]`,
	// Other spacing, key order, repeated keys (the last wins).
	" [ {\"name\":\"A\" ,\"ids\":[ \"x\" ,\"y\" ] } ,{ } ]\n",
	`[{"name": "First", "name": "Second", "ids": ["a"], "ids": ["b", "c"]}]`,
}

// authorsInputs are texts DecodeAuthors must read as json.Unmarshal does:
// jsonbAuthors and everything that must go to encoding/json or fail as
// it fails.
var authorsInputs = append(slices.Clone(jsonbAuthors),
	// For encoding/json: escapes, case-insensitive keys, unknown keys,
	// nulls, invalid UTF-8 (replaced by U+FFFD).
	`[{"name": "O\"Brien \\ Smith \u00e9", "ids": ["a\/b"]}]`,
	`[{"name": "Caf\u00e9"}, {"name": "Back\\slash"}]`,
	`[{"Name": "Capital Key", "IDS": ["k"]}]`,
	`[{"name": "A", "affiliation": "Somewhere"}]`,
	`[{"name": null, "ids": null}]`,
	`null`,
	"[{\"name\": \"bad \xff utf8\"}]",
	"[{\"na\xffme\": \"A\"}]",
	// Not authors: errors, as encoding/json's.
	``,
	`[`,
	`[{"name": "A"},]`,
	`[{"name": "A",}]`,
	`[{"ids": ["a",]}]`,
	`[{"name": 7}]`,
	`[{"ids": [1]}]`,
	`[{"name": "A"}] x`,
	`{"name": "A"}`,
	"[{\"name\": \"tab\there\"}]",
	`[{"name": "unterminated}]`,
	`[{"name" "A"}]`,
)

// TestDecodeAuthorsIsJSONUnmarshal: for every input, DecodeAuthors gives
// what json.Unmarshal into a []Author gives (the same authors, an error
// where it errs), and the shapes jsonb writes take the fast path.
func TestDecodeAuthorsIsJSONUnmarshal(t *testing.T) {
	for _, in := range authorsInputs {
		checkDecodeAuthors(t, in)
	}
	for _, in := range jsonbAuthors {
		if _, ok := decodeAuthorsFast([]byte(in)); !ok {
			t.Errorf("%q went to encoding/json", in)
		}
	}
}

func checkDecodeAuthors(t *testing.T, in string) {
	t.Helper()
	var want []Author
	werr := json.Unmarshal([]byte(in), &want)
	got, err := DecodeAuthors([]byte(in))
	if (err != nil) != (werr != nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", in, err, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, encoding/json gives %#v", in, got, want)
	}
}

// FuzzDecodeAuthors: DecodeAuthors agrees with json.Unmarshal on any
// input (go test runs the seeds; go test -fuzz FuzzDecodeAuthors
// explores).
func FuzzDecodeAuthors(f *testing.F) {
	for _, in := range authorsInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { checkDecodeAuthors(t, in) })
}

func BenchmarkDecodeAuthors(b *testing.B) {
	data := []byte(authorsInputs[0])
	b.Run("DecodeAuthors", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := DecodeAuthors(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var as []Author
			if err := json.Unmarshal(data, &as); err != nil {
				b.Fatal(err)
			}
		}
	})
}
