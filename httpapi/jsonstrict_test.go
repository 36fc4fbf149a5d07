package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"followfeed/apperr"
)

// partialTarget is a body whose fields left out stay as they are.
type partialTarget struct {
	Order *string `json:"order" want:"\"newest\" or \"best\""`
	Hour  *int    `json:"hour"`
	Until *string `json:"until" null:"no end"`
}

func (*partialTarget) partial() {}

// TestCheckJSON: the strict pass refuses duplicate keys, keys matching a
// field only by case, unknown nested keys, wrong JSON types and nulls
// where the field takes none, naming each by its JSON path and saying the
// type in words; a map takes any key, self-decoding types pass (null too),
// as a field tagged null does, and syntax is left to the decoder.
func TestCheckJSON(t *testing.T) {
	type inner struct {
		Days  []string `json:"days" want:"a list of weekday names"`
		Hour  int      `json:"hour"`
		Small uint8    `json:"small"`
	}
	type target struct {
		State   string             `json:"state"`
		On      *bool              `json:"on"`
		Inner   *inner             `json:"inner"`
		Items   []inner            `json:"items"`
		Labels  map[string]string  `json:"labels"`
		Nested  map[string]inner   `json:"nested"`
		Raw     json.RawMessage    `json:"raw"`
		When    *time.Time         `json:"when"`
		Skip    string             `json:"-"`
		Free    map[string]any     `json:"free"`
		Ratio   float64            `json:"ratio"`
		Tags    *map[string][]bool `json:"tags"`
		Maybe   *string            `json:"maybe" null:"none"`
		Days    nullable[[]string] `json:"days"`
		Partial *partialTarget     `json:"partial"`
		Any     any                `json:"any"`
		Opt     *nullable[[]inner] `json:"opt"`
	}
	typ := reflect.TypeFor[target]()
	ok := []string{
		`{}`,
		`{"state":"read","on":true,"inner":{"days":["mon"],"hour":9,"small":255}}`,
		`{"raw":null,"when":null,"free":{"x":null},"any":null,"maybe":null,"days":null,"opt":null}`,
		`{"days":["mon"],"opt":[{"hour":1}],"partial":{"order":"best","until":null}}`,
		`{"labels":{"State":"x","state":"y","anything goes":"z"}}`,
		`{"nested":{"a":{"hour":1},"A":{"days":[]}}}`,
		`{"raw":{"whatever":[1,"two",{"3":null}]},"when":"2026-12-24T00:00:00Z"}`,
		`{"free":{"x":[{"y":1}]},"ratio":0.5,"tags":{"t":[true,false]}}`,
		`{"items":[{"hour":1},{"days":["tue"]}]}`,
		`{"state": "read"`,   // truncated: the decoder reports it
		`{"state" "read"}`,   // malformed: likewise
		`{"state":"a"} junk`, // trailing data: likewise
	}
	for _, body := range ok {
		if err := checkJSON([]byte(body), typ, ""); err != nil {
			t.Errorf("%s: refused: %v", body, err)
		}
	}
	for _, tc := range []struct{ body, field, message string }{
		{`{"state":"read","state":"done"}`, "state", "appears more than once; send each field once"},
		{`{"labels":{"a":"1","a":"2"}}`, "labels.a", "appears more than once; send each field once"},
		{`{"State":"read"}`, "State", `is not a known field; names are exact: did you mean "state"?`},
		{`{"Skip":"x"}`, "Skip", "is not a known field"},
		{`{"inner":{"bogus":1}}`, "inner.bogus", "is not a known field"},
		{`{"inner":{"Hour":1}}`, "inner.Hour", `is not a known field; names are exact: did you mean "hour"?`},
		{`{"items":[{"hour":1},{"nope":2}]}`, "items[1].nope", "is not a known field"},
		{`{"nested":{"k":{"x":1}}}`, "nested.k.x", "is not a known field"},
		{`{"state":5}`, "state", "must be a string"},
		{`{"state":["read"]}`, "state", "must be a string"},
		{`{"on":"yes"}`, "on", "must be true or false"},
		{`{"inner":[]}`, "inner", "must be an object"},
		{`{"inner":{"days":"mon"}}`, "inner.days", "must be a list of weekday names"},
		{`{"inner":{"days":[1]}}`, "inner.days[0]", "must be a string"},
		{`{"inner":{"hour":9.5}}`, "inner.hour", "must be a whole number"},
		{`{"inner":{"hour":"9"}}`, "inner.hour", "must be a whole number"},
		{`{"inner":{"hour":99999999999999999999}}`, "inner.hour", "is too large a number"},
		{`{"inner":{"small":-1}}`, "inner.small", "must be a whole number, 0 or more"},
		{`{"items":{"hour":1}}`, "items", "must be a list of objects"},
		{`{"labels":[]}`, "labels", "must be an object"},
		{`{"labels":{"a":1}}`, "labels.a", "must be a string"},
		{`{"ratio":"half"}`, "ratio", "must be a number"},
		{`{"tags":{"t":[1]}}`, "tags.t[0]", "must be true or false"},
		{`{"state":null}`, "state", "must be a string, not null"},
		{`{"on":null}`, "on", "must be true or false, not null"},
		{`{"inner":null}`, "inner", "must be an object, not null"},
		{`{"items":null}`, "items", "must be a list of objects, not null"},
		{`{"labels":null}`, "labels", "must be an object, not null"},
		{`{"labels":{"a":null}}`, "labels.a", "must be a string, not null"},
		{`{"inner":{"days":null}}`, "inner.days", "must be a list of weekday names, not null"},
		{`{"inner":{"days":["mon",null]}}`, "inner.days[1]", "must be a string"},
		{`{"items":[null]}`, "items[0]", "must be an object"},
		{`{"days":["mon",null]}`, "days[1]", "must be a string"},
		{`{"opt":[{"hour":null}]}`, "opt[0].hour", "must be a whole number, not null"},
		{`{"partial":null}`, "partial", "must be an object, not null"},
		{`{"partial":{"order":null}}`, "partial.order", `must be "newest" or "best", not null; leave the field out to keep it`},
		{`{"partial":{"hour":null}}`, "partial.hour", "must be a whole number, not null; leave the field out to keep it"},
	} {
		err := checkJSON([]byte(tc.body), typ, "")
		e, isApp := apperr.As(err)
		if !isApp || e.Code != apperr.Invalid || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("%s: want %s %q, got %#v", tc.body, tc.field, tc.message, err)
		}
	}
	// The root: a body that is not an object is a 400; under a prefix
	// the fields carry it.
	for _, body := range []string{`[]`, `"x"`, `5`, `null`, ` null `} {
		if e, _ := apperr.As(checkJSON([]byte(body), typ, "")); e == nil || e.Code != apperr.BadRequest {
			t.Errorf("%s: want a 400, got %v", body, e)
		}
	}
	if e, _ := apperr.As(checkJSON([]byte(`{"inner":{"bogus":1}}`), typ, "me")); e == nil || e.Field != "me.inner.bogus" {
		t.Errorf("prefixed path: %v", e)
	}
}
