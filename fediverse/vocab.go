package fediverse

import (
	"bytes"
	"encoding/json"
	"strings"

	"followfeed/apperr"
)

// The ActivityStreams vocabulary followfeed speaks, as typed encoding/json
// structs (docs/ARCHITECTURE.md says why not go-fed/activity's streams):
// what it serves (actors, notes, activities, collections) and what it
// reads of incoming activities (id, type, actor, object).

// Media types of ActivityPub documents. Both are served and accepted.
const (
	ContentTypeActivity = "application/activity+json"
	ContentTypeLD       = `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`
)

// Public is the special collection "everyone" (a note's to).
const Public = "https://www.w3.org/ns/activitystreams#Public"

// actorContext is the JSON-LD context of actor documents: ActivityStreams,
// the security vocabulary (publicKey) and Mastodon's terms.
var actorContext = []any{
	"https://www.w3.org/ns/activitystreams",
	"https://w3id.org/security/v1",
	map[string]string{
		"toot":                      "http://joinmastodon.org/ns#",
		"discoverable":              "toot:discoverable",
		"manuallyApprovesFollowers": "as:manuallyApprovesFollowers",
		"Hashtag":                   "as:Hashtag",
	},
}

// asContext is the context of everything else followfeed serves.
const asContext = "https://www.w3.org/ns/activitystreams"

// Actor is an actor document.
type Actor struct {
	Context                   any        `json:"@context"`
	ID                        string     `json:"id"`
	Type                      string     `json:"type"`
	PreferredUsername         string     `json:"preferredUsername"`
	Name                      string     `json:"name"`
	Summary                   string     `json:"summary"`
	URL                       string     `json:"url"`
	Inbox                     string     `json:"inbox"`
	Outbox                    string     `json:"outbox"`
	Followers                 string     `json:"followers"`
	Following                 string     `json:"following"`
	Endpoints                 *Endpoints `json:"endpoints,omitempty"`
	PublicKey                 PublicKey  `json:"publicKey"`
	Discoverable              bool       `json:"discoverable"`
	ManuallyApprovesFollowers bool       `json:"manuallyApprovesFollowers"`
	Icon                      *Image     `json:"icon,omitempty"`
	Published                 string     `json:"published,omitempty"`
}

// Endpoints carries the shared inbox.
type Endpoints struct {
	SharedInbox string `json:"sharedInbox,omitempty"`
}

// PublicKey is an actor's key (security vocabulary).
type PublicKey struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// Image is an icon.
type Image struct {
	Type      string `json:"type"`
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
}

// Note is a post: one paper, or a category's daily summary.
type Note struct {
	Context      any      `json:"@context,omitempty"`
	ID           string   `json:"id"`
	Type         string   `json:"type"`
	AttributedTo string   `json:"attributedTo"`
	Published    string   `json:"published"`
	Updated      string   `json:"updated,omitempty"`
	URL          string   `json:"url,omitempty"`
	To           []string `json:"to"`
	Cc           []string `json:"cc"`
	Content      string   `json:"content"`
	Tag          []Tag    `json:"tag,omitempty"`
}

// Tag is a hashtag of a note.
type Tag struct {
	Type string `json:"type"`
	Href string `json:"href"`
	Name string `json:"name"`
}

// Tombstone replaces a deleted note.
type Tombstone struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Activity is an outgoing activity (Create, Update, Delete, Accept).
type Activity struct {
	Context   any      `json:"@context,omitempty"`
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	Actor     string   `json:"actor"`
	Published string   `json:"published,omitempty"`
	To        []string `json:"to,omitempty"`
	Cc        []string `json:"cc,omitempty"`
	Object    any      `json:"object"`
}

// OrderedCollection is an outbox or followers collection.
type OrderedCollection struct {
	Context    any    `json:"@context"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	TotalItems int64  `json:"totalItems"`
	First      string `json:"first,omitempty"`
	Last       string `json:"last,omitempty"`
}

// OrderedCollectionPage is a page of the outbox, newest first.
type OrderedCollectionPage struct {
	Context      any               `json:"@context"`
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	PartOf       string            `json:"partOf"`
	Next         string            `json:"next,omitempty"`
	Prev         string            `json:"prev,omitempty"`
	OrderedItems []json.RawMessage `json:"orderedItems"`
}

// JRD is a WebFinger answer (RFC 7033).
type JRD struct {
	Subject string    `json:"subject"`
	Aliases []string  `json:"aliases,omitempty"`
	Links   []JRDLink `json:"links"`
}

// JRDLink is one link of a JRD.
type JRDLink struct {
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
	Href string `json:"href"`
}

// incoming is what followfeed reads of an activity POSTed to an inbox.
type incoming struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Actor  ref             `json:"actor"`
	Object json.RawMessage `json:"object"`
}

// ref is a JSON-LD reference: an id string, or an object with an id.
type ref string

// UnmarshalJSON reads either form.
func (r *ref) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = ref(s)
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*r = ref(o.ID)
	return nil
}

// MaxActivityBytes is the largest activity an inbox reads (Mastodon sends
// far smaller ones; a larger body is a 413).
const MaxActivityBytes = 256 << 10

// parseActivity reads an incoming activity: a JSON object with a string or
// array @context, an absolute id, a type, an actor and (for the types
// followfeed acts on) an object. Anything else is an apperr.BadRequest
// saying what is wrong.
func parseActivity(body []byte) (*incoming, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, apperr.New(apperr.BadRequest, "the body must be a JSON-LD object (an ActivityStreams activity)")
	}
	var a incoming
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&a); err != nil {
		return nil, apperr.New(apperr.BadRequest, "the body is not valid JSON-LD: %v", err)
	}
	if dec.More() {
		return nil, apperr.New(apperr.BadRequest, "the body holds more than one JSON value")
	}
	var ctx struct {
		Context json.RawMessage `json:"@context"`
	}
	_ = json.Unmarshal(body, &ctx)
	if c := bytes.TrimSpace(ctx.Context); len(c) == 0 || (c[0] != '"' && c[0] != '[' && c[0] != '{') {
		return nil, apperr.New(apperr.BadRequest, "the activity has no @context (https://www.w3.org/ns/activitystreams)")
	}
	switch {
	case a.Type == "":
		return nil, apperr.New(apperr.BadRequest, "the activity has no type")
	case !absoluteHTTP(string(a.Actor)):
		return nil, apperr.New(apperr.BadRequest, "the activity's actor must be an absolute https URL")
	case a.ID != "" && !absoluteHTTP(a.ID):
		return nil, apperr.New(apperr.BadRequest, "the activity's id must be an absolute URL")
	}
	return &a, nil
}

// absoluteHTTP reports whether s looks like an http(s) URL (the guard
// decides later whether it may be reached).
func absoluteHTTP(s string) bool {
	return (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && len(s) <= 2048 && !strings.ContainsAny(s, " \t\r\n")
}

// objectRef reads an activity's object as a reference (its id).
func (a *incoming) objectRef() string {
	var r ref
	if err := json.Unmarshal(a.Object, &r); err != nil {
		return ""
	}
	return string(r)
}

// objectActivity reads an activity's object as an embedded activity (an
// Undo's Follow): nil when it is only a reference.
func (a *incoming) objectActivity() *incoming {
	o := bytes.TrimSpace(a.Object)
	if len(o) == 0 || o[0] != '{' {
		return nil
	}
	var in incoming
	if err := json.Unmarshal(o, &in); err != nil {
		return nil
	}
	return &in
}
