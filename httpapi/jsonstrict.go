package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"followfeed/apperr"
)

// checkJSON walks body, one JSON value meant for a Go value of type t,
// with json.Decoder tokens and refuses what encoding/json would let by or
// explain only in Go's words:
//
//   - a key twice in one object ({"state":"read","state":"done"});
//   - a key that no field of the struct names exactly (encoding/json
//     matches keys case-insensitively, so {"State":…} would set state);
//   - a value of the wrong JSON type, said in words ("must be a string",
//     "must be an object", or the field's want:"…" tag);
//   - a null where the field takes none (encoding/json would leave the
//     field as it was: {"digest": {"order": null}} would change nothing),
//     a member's said as "must be …, not null" (and, in a partialBody,
//     "leave the field out to keep it"), a list's element's as any other
//     value of the wrong type. Null passes where it means something: in a
//     field tagged null:"…" (what null does there) and for types that
//     read it themselves (json.RawMessage, nullable, interfaces: their
//     handlers say what null is).
//
// Every error is an *apperr.Error naming the field by its JSON path from
// root ("digest.weekdays", "follows[2].kind"); with root "" a body that is
// not an object (null too) is a 400. A map's keys are free (only twice is
// refused); json.RawMessage, interfaces and types with their own
// UnmarshalJSON or UnmarshalText are left to their decoders. Syntax
// errors are not checkJSON's business: it returns nil and leaves them to
// the decoder, which reports them with their offset.
func checkJSON(body []byte, t reflect.Type, root string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := jsonWalker{dec: dec}
	err := w.value(t, root, slot{})
	if errors.Is(err, errJSONSyntax) {
		return nil
	}
	return err
}

// errJSONSyntax stops the walk at a malformed body.
var errJSONSyntax = errors.New("json syntax")

type jsonWalker struct{ dec *json.Decoder }

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonShapedType  = reflect.TypeFor[jsonShaped]()
	partialBodyType = reflect.TypeFor[partialBody]()
)

// partialBody is a body (or part of one) whose fields left out stay as
// they are (PATCH /v1/me, a follow's options): a null refused in it says
// how to keep the field.
type partialBody interface{ partial() }

// slot is what the walker knows of where a value goes, besides its type.
type slot struct {
	// want is the field's own words for what it takes (its want:"…" tag).
	want string
	// member: the value is an object's, so a null is said as such ("must
	// be a string, not null"); a list's element or the body itself is
	// refused as any other value of the wrong type.
	member bool
	// nullable: the field's null:"…" tag says what null does there.
	nullable bool
	// keep: the member is a partialBody's.
	keep bool
}

// jsonShaped is a type that decodes itself (to tell null from absent, say)
// but whose JSON has the shape of another type, which checkJSON checks.
type jsonShaped interface{ jsonShape() reflect.Type }

// readsNull reports whether a null reaches t's own decoding: an
// interface, or a type with its own UnmarshalJSON (json.RawMessage,
// nullable). For any other type encoding/json ignores a null.
func readsNull(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// decodesItself reports whether t reads its own JSON (RawMessage,
// time.Time, an interface …), so checkJSON does not judge its value.
func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

func (w *jsonWalker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, errJSONSyntax
	}
	return tok, nil
}

// value checks the next value for type t at path, in the slot s.
func (w *jsonWalker) value(t reflect.Type, path string, s slot) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := w.token()
	if err != nil {
		return err
	}
	want := s.want
	wrong := func() error {
		if want == "" {
			want = jsonTypeWords(t)
		}
		if path == "" {
			return apperr.New(apperr.BadRequest, "the body is not a JSON object")
		}
		return apperr.InvalidField(path, "must be %s", want)
	}
	if tok == nil { // null
		switch {
		case s.nullable || readsNull(t):
			return nil
		case s.member:
			if want == "" {
				want = jsonTypeWords(t)
			}
			keep := ""
			if s.keep {
				keep = "; leave the field out to keep it"
			}
			return apperr.InvalidField(path, "must be %s, not null%s", want, keep)
		}
		return wrong()
	}
	if reflect.PointerTo(t).Implements(jsonShapedType) {
		t = reflect.New(t).Interface().(jsonShaped).jsonShape()
	}
	if decodesItself(t) {
		return w.skip(tok)
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return wrong()
		}
		keep := reflect.PointerTo(t).Implements(partialBodyType)
		return w.object(path, func(key, at string) (reflect.Type, slot, error) {
			f, ok := jsonField(t, key)
			if !ok {
				msg := "is not a known field"
				if near, ok := jsonFieldFold(t, key); ok {
					msg += "; names are exact: did you mean \"" + near + "\"?"
				}
				return nil, slot{}, apperr.InvalidField(at, "%s", msg)
			}
			_, nullable := f.Tag.Lookup("null")
			return f.Type, slot{want: f.Tag.Get("want"), member: true, nullable: nullable, keep: keep}, nil
		})
	case reflect.Map:
		if tok != json.Delim('{') {
			return wrong()
		}
		return w.object(path, func(string, string) (reflect.Type, slot, error) { return t.Elem(), slot{member: true}, nil })
	case reflect.Slice, reflect.Array:
		if tok != json.Delim('[') {
			return wrong()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]", slot{}); err != nil {
				return err
			}
		}
		_, err := w.token() // ]
		return err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong()
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong()
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			if _, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && !strings.ContainsAny(string(n), ".eE") {
				return apperr.InvalidField(path, "is too large a number")
			}
			return wrong()
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong()
		}
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			return wrong()
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := tok.(json.Number); !ok {
			return wrong()
		}
	default:
		return w.skip(tok)
	}
	return nil
}

// object walks an object's members (its '{' read): each key at most once,
// each value checked for the type and slot field gives for it.
func (w *jsonWalker) object(path string, field func(key, at string) (reflect.Type, slot, error)) error {
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := key
		if path != "" {
			at = path + "." + key
		}
		if seen[key] {
			return apperr.InvalidField(at, "appears more than once; send each field once")
		}
		seen[key] = true
		ft, s, err := field(key, at)
		if err != nil {
			return err
		}
		if err := w.value(ft, at, s); err != nil {
			return err
		}
	}
	_, err := w.token() // }
	return err
}

// skip consumes the rest of a value whose first token is tok.
func (w *jsonWalker) skip(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// jsonField finds the field of struct t that encoding/json fills from
// key, matching the name exactly (embedded structs' fields included).
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := jsonName(f); ok && name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonFieldFold is the exact name of the field key matches but for case.
func jsonFieldFold(t reflect.Type, key string) (string, bool) {
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := jsonName(f); ok && strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}

// jsonName is the key encoding/json gives f; false for fields it skips
// (unexported, json:"-", or an untagged embedded struct, whose own fields
// VisibleFields lists).
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

// jsonTypeWords says what JSON a value of type t takes: "a string", "a
// list of strings", "an object" …
func jsonTypeWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		switch e := jsonTypeWords(t.Elem()); e {
		case "a string":
			return "a list of strings"
		case "an object":
			return "a list of objects"
		case "true or false":
			return "a list of true or false values"
		case "a number":
			return "a list of numbers"
		case "a whole number", "a whole number, 0 or more":
			return "a list of whole numbers"
		}
		return "a list"
	}
	return "a JSON value of another type"
}
