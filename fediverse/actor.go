package fediverse

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/database"
	"followfeed/follow"
)

// ActorInfo is an actor as the product shows it: its own target (whose
// handle it has), what a Mastodon user types to follow it, its name, and
// every id it speaks for.
type ActorInfo struct {
	Target follow.Target
	Handle string
	// Acct is what a Mastodon user types: "@cs.LG@followfeed.example".
	Acct string
	ID   string // the actor's id, its URL
	Name string
	// IDs are every id of the person or institution (a category: its own).
	IDs []string
}

// Paths of the ActivityPub surface under PUBLIC_URL (httpapi registers
// them; ids are built from them here).
const (
	ActorPrefix    = "/ap/actors/"
	NotePrefix     = "/ap/notes/"
	ActivityPrefix = "/ap/activities/"
	SharedInbox    = "/ap/inbox"
	IconPath       = "/ap/icon.png"
)

// ActorURL is the id of t's actor.
func (s *Service) ActorURL(t follow.Target) string {
	return s.abs(ActorPrefix + url.PathEscape(Handle(t)))
}

// publicKind reports whether t has a public feed (and so an actor).
func publicKind(t follow.Target) bool {
	return t.Kind == follow.Researcher || t.Kind == follow.Category || t.Kind == follow.Institution
}

// Resolve finds the actor of the public feed t names: for a category or
// archive its own; for a researcher or institution the actor of the whole
// identity, whichever of its ids was asked. That actor is the id that
// already has an actor (followers here: its URL never changes), the
// oldest when several do, else the identity's canonical id (ORCID or ROR
// first: identity.Identity.ID). An id the registry does not know is its
// own actor.
func (s *Service) Resolve(ctx context.Context, t follow.Target) (ActorInfo, error) {
	if !publicKind(t) {
		return ActorInfo{}, apperr.New(apperr.NotFound, "only researchers, categories and institutions have actors")
	}
	info := ActorInfo{Target: t, IDs: []string{t.ID}}
	if t.Kind == follow.Category {
		info.Name = t.DisplayName()
		return s.finish(info), nil
	}
	ident, err := s.identities.Lookup(ctx, t.Kind, t.ID, 0)
	switch {
	case errors.Is(err, database.ErrNotFound):
		name, err := s.names.Name(ctx, t)
		if err != nil {
			return ActorInfo{}, err
		}
		info.Name = name
		if info.Name == "" {
			info.Name = t.ID
		}
		return s.finish(info), nil
	case err != nil:
		return ActorInfo{}, err
	}
	info.IDs, info.Name = ident.IDs, ident.Name
	if info.Name == "" {
		info.Name = ident.ID
	}
	keys := make([]string, len(ident.IDs))
	for i, id := range ident.IDs {
		keys[i] = follow.Target{Kind: t.Kind, ID: id}.Key()
	}
	// An actor that exists keeps its URL: the asked id's own first, then
	// the oldest of the identity's (ap_actors primary key probes).
	var own string
	err = s.db.Pool.QueryRow(ctx, `
		SELECT key FROM ap_actors WHERE key = ANY($1)
		ORDER BY key = $2 DESC, created_at, key LIMIT 1`, keys, t.Key()).Scan(&own)
	switch {
	case err == nil:
		at, err := follow.TargetFromKey(own)
		if err != nil {
			return ActorInfo{}, err
		}
		info.Target = at
	case errors.Is(err, pgx.ErrNoRows):
		info.Target = follow.Target{Kind: t.Kind, ID: ident.ID}
	default:
		return ActorInfo{}, fmt.Errorf("reading the actor of %s: %w", t, err)
	}
	return s.finish(info), nil
}

func (s *Service) finish(info ActorInfo) ActorInfo {
	info.Handle = Handle(info.Target)
	info.Acct = "@" + info.Handle + "@" + s.host
	info.ID = s.ActorURL(info.Target)
	return info
}

// ResolveHandle is Resolve of the target a handle names (ParseHandle).
func (s *Service) ResolveHandle(ctx context.Context, handle string) (ActorInfo, error) {
	t, err := ParseHandle(handle)
	if err != nil {
		return ActorInfo{}, err
	}
	return s.Resolve(ctx, t)
}

// summary is the actor's profile text (HTML), saying how it posts: one
// note per paper, or, for a category or archive without CategoryNotes
// (perPaper), one summary a day.
func summary(info ActorInfo, perPaper bool) string {
	what := "New arXiv papers in " + info.Name
	switch info.Target.Kind {
	case follow.Researcher:
		what = "New arXiv papers by " + info.Name
	case follow.Institution:
		what = "New arXiv papers from " + info.Name
	}
	ids := ""
	if info.Target.Kind != follow.Category {
		ids = " Ids: " + strings.Join(info.IDs, ", ") + "."
	}
	how := ", one post per paper"
	if !perPaper {
		how = ", one summary post a day"
	}
	return "<p>" + html.EscapeString(what) + how + ", from followfeed (a bot: it reads no replies)." +
		html.EscapeString(ids) + "</p>"
}

// ActorDocument is the actor document of info (Resolve's answer).
func (s *Service) ActorDocument(ctx context.Context, info ActorInfo) (*Actor, error) {
	k, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	a := &Actor{
		Context:                   actorContext,
		ID:                        info.ID,
		Type:                      "Service",
		PreferredUsername:         info.Handle,
		Name:                      info.Name,
		Summary:                   summary(info, s.perPaper(info.Target.Key())),
		URL:                       info.ID,
		Inbox:                     info.ID + "/inbox",
		Outbox:                    info.ID + "/outbox",
		Followers:                 info.ID + "/followers",
		Following:                 info.ID + "/following",
		Endpoints:                 &Endpoints{SharedInbox: s.abs(SharedInbox)},
		PublicKey:                 PublicKey{ID: info.ID + "#main-key", Owner: info.ID, PublicKeyPem: k.public},
		Discoverable:              true,
		ManuallyApprovesFollowers: false,
		Icon:                      &Image{Type: "Image", MediaType: "image/png", URL: s.abs(IconPath)},
	}
	return a, nil
}

// Followers is the followers collection of info: its size only (who
// follows a feed is nobody else's business).
func (s *Service) Followers(ctx context.Context, info ActorInfo) (*OrderedCollection, error) {
	var n int64
	// ap_followers_actor_inbox_idx: an index-only count.
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ap_followers WHERE actor_key = $1`, info.Target.Key()).Scan(&n); err != nil {
		return nil, fmt.Errorf("counting followers of %s: %w", info.Target, err)
	}
	return &OrderedCollection{Context: asContext, ID: info.ID + "/followers", Type: "OrderedCollection", TotalItems: n}, nil
}

// Following is the (always empty) collection of whom an actor follows.
func (s *Service) Following(info ActorInfo) *OrderedCollection {
	return &OrderedCollection{Context: asContext, ID: info.ID + "/following", Type: "OrderedCollection"}
}

// WebFinger answers a WebFinger query (RFC 7033) for resource:
// "acct:HANDLE@HOST" (the acct: may be left out, a leading @ too) or an
// actor's URL. HOST must be this instance's (without regard to case); the
// handle is matched without regard to case, and every id of a person
// answers with the one actor (subject: its own handle). Anything else is
// an apperr NotFound or BadRequest.
func (s *Service) WebFinger(ctx context.Context, resource string) (*JRD, error) {
	resource = strings.TrimSpace(resource)
	if resource == "" {
		return nil, apperr.New(apperr.BadRequest, "resource is required: ?resource=acct:cs.LG@%s", s.host)
	}
	var handle string
	switch {
	case strings.HasPrefix(resource, "https://") || strings.HasPrefix(resource, "http://"):
		prefix := s.abs(ActorPrefix)
		if !strings.HasPrefix(strings.ToLower(resource), strings.ToLower(prefix)) {
			return nil, apperr.New(apperr.NotFound, "%s is not an actor of this server", resource)
		}
		h, err := url.PathUnescape(resource[len(prefix):])
		if err != nil {
			return nil, apperr.New(apperr.NotFound, "%s is not an actor of this server", resource)
		}
		handle = h
	default:
		acct := strings.TrimPrefix(strings.TrimPrefix(resource, "acct:"), "@")
		i := strings.LastIndexByte(acct, '@')
		if i <= 0 {
			return nil, apperr.New(apperr.BadRequest, "resource must look like acct:cs.LG@%s", s.host)
		}
		if !strings.EqualFold(acct[i+1:], s.host) {
			return nil, apperr.New(apperr.NotFound, "this server is %s, not %s", s.host, acct[i+1:])
		}
		handle = acct[:i]
	}
	info, err := s.ResolveHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	return &JRD{
		Subject: "acct:" + info.Handle + "@" + s.host,
		Aliases: []string{info.ID},
		Links: []JRDLink{
			{Rel: "self", Type: ContentTypeActivity, Href: info.ID},
			{Rel: "http://webfinger.net/rel/profile-page", Type: "text/html", Href: info.ID},
		},
	}, nil
}

// NodeInfoVersion is the NodeInfo schema served.
const NodeInfoVersion = "2.1"

// NodeInfo is the NodeInfo 2.1 document.
type NodeInfo struct {
	Version  string `json:"version"`
	Software struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Repository string `json:"repository,omitempty"`
		Homepage   string `json:"homepage,omitempty"`
	} `json:"software"`
	Protocols []string `json:"protocols"`
	Services  struct {
		Inbound  []string `json:"inbound"`
		Outbound []string `json:"outbound"`
	} `json:"services"`
	OpenRegistrations bool `json:"openRegistrations"`
	Usage             struct {
		Users struct {
			Total          int64 `json:"total"`
			ActiveMonth    int64 `json:"activeMonth"`
			ActiveHalfyear int64 `json:"activeHalfyear"`
		} `json:"users"`
		LocalPosts int64 `json:"localPosts"`
	} `json:"usage"`
	Metadata map[string]any `json:"metadata"`
}

// NodeInfoDocument is this instance's NodeInfo: users are the actors with
// followers, local posts their notes.
func (s *Service) NodeInfoDocument(ctx context.Context, version string) (*NodeInfo, error) {
	n := &NodeInfo{Version: NodeInfoVersion, Protocols: []string{"activitypub"}, Metadata: map[string]any{
		"nodeName":        "followfeed at " + s.host,
		"nodeDescription": "New arXiv papers of researchers, categories and institutions, one actor per public feed.",
	}}
	n.Software.Name, n.Software.Version = "followfeed", version
	n.Services.Inbound, n.Services.Outbound = []string{}, []string{"atom1.0", "rss2.0"}
	since := s.now().Add(-30 * 24 * time.Hour)
	half := s.now().Add(-182 * 24 * time.Hour)
	err := s.db.Pool.QueryRow(ctx, `
		SELECT (SELECT count(DISTINCT actor_key) FROM ap_followers),
		       (SELECT count(DISTINCT actor_key) FROM ap_notes WHERE published_at > $1),
		       (SELECT count(DISTINCT actor_key) FROM ap_notes WHERE published_at > $2),
		       (SELECT count(*) FROM ap_notes WHERE deleted_at IS NULL)`, since, half).
		Scan(&n.Usage.Users.Total, &n.Usage.Users.ActiveMonth, &n.Usage.Users.ActiveHalfyear, &n.Usage.LocalPosts)
	if err != nil {
		return nil, fmt.Errorf("reading NodeInfo usage: %w", err)
	}
	return n, nil
}
