// Package mute owns what users mute without unfollowing (issue #27,
// item 2): a researcher (every id of the person), words in the query
// syntax, or a category's cross-lists, for every follow or scoped to one.
// It writes the mutes table (migration 00034) and nothing else; package
// match applies the mutes to every surface (feeds, digests, instant
// alerts, push channels) through mute/mutesql, so a mute means one thing
// wherever a paper would reach the user.
package mute

import (
	"errors"
	"strings"
	"time"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/search"
)

// MaxPerUser is the most mutes one user may have: enough for a few
// authors, phrases and cross-lists per follow; a long list is better said
// by unfollowing or by a narrower query. Past it, Create is an
// apperr.Invalid error naming the limit.
const MaxPerUser = 100

// Kind is what a mute hides.
type Kind string

// The kinds of mute.
const (
	// Researcher hides the papers of a person: any key of theirs that the
	// identity registry links to the muted id.
	Researcher Kind = "researcher"
	// Query hides the papers a query (words in the query syntax) matches
	// (title, abstract, authors, cat:), e.g. abs:"dark matter".
	Query Kind = "query"
	// Category hides the papers listed in a category or archive only as a
	// cross-list: their primary category is another one.
	Category Kind = "category"
)

// Mute is one of a user's mutes.
type Mute struct {
	ID int64
	// What is muted: a researcher (ID normalised as a follow's), a query
	// (ID its normal form) or a category or archive (its cross-lists).
	What follow.Target
	// Scope, when set, is the one follow the mute applies to: the paper
	// loses that follow as a reason, and leaves the user's surfaces only
	// when no other follow matches it. Nil: every follow (the paper leaves).
	Scope     *follow.Target
	CreatedAt time.Time
}

// Kind is the kind of mute m is.
func (m Mute) Kind() Kind { return kindOf(m.What) }

// Key is the match key m mutes (follow.Target.Key of What).
func (m Mute) Key() string { return m.What.Key() }

// kindOf maps a muted target to its kind.
func kindOf(t follow.Target) Kind {
	switch t.Kind {
	case follow.Researcher:
		return Researcher
	case follow.Query:
		return Query
	}
	return Category
}

// Input is a mute as a user asks for it: exactly one of Researcher, Query
// and Category, with CrossLists false for a category (only its
// cross-lists can be muted), and optionally the follow it is limited to.
// Field names in errors are the API's: "researcher", "query", "category",
// "cross_lists", "follow", "follow.kind", "follow.id".
type Input struct {
	Researcher, Query, Category *string
	CrossLists                  *bool
	// FollowKind and FollowID name the scope; HasFollow says a scope was
	// given (an API body's "follow" object), so that one given with empty
	// fields is an error rather than every follow. All unset: every follow.
	FollowKind, FollowID string
	HasFollow            bool
}

// Spec is a validated, normalised mute, ready for Service.Create.
type Spec struct {
	What  follow.Target
	Scope *follow.Target
}

// Parse validates and normalises in. A researcher id is normalised as a
// researcher follow's (follow.ParseResearcherID); a query is parsed and
// normalised by package search exactly as a query follow's, its
// error carrying the position (apperr Details[0].Index); a category is an
// active arXiv category or archive. Every error is an *apperr.Error with
// Code Invalid and the field it is about. Whether the scope is one of the
// user's follows is checked by Create.
func Parse(in Input) (Spec, error) {
	n := 0
	for _, p := range []*string{in.Researcher, in.Query, in.Category} {
		if p != nil {
			n++
		}
	}
	const forms = `say what to mute: {"researcher": "openalex:A5023888391"}, {"query": "abs:\"dark matter\""} or {"category": "cs.LG", "cross_lists": false}`
	if n == 0 {
		return Spec{}, apperr.InvalidField("researcher", "%s", forms)
	}
	if n > 1 {
		return Spec{}, apperr.InvalidField("researcher", "one mute mutes one thing: give only one of researcher, query and category")
	}
	var s Spec
	switch {
	case in.Researcher != nil:
		id, err := follow.ParseResearcherID(*in.Researcher)
		if err != nil {
			return Spec{}, apperr.Refield(err, "researcher")
		}
		s.What = follow.Target{Kind: follow.Researcher, ID: id}
	case in.Query != nil:
		q, err := follow.CompileQuery(*in.Query)
		if err != nil {
			var se *search.Error
			if errors.As(err, &se) {
				return Spec{}, se.AppError("query")
			}
			return Spec{}, err
		}
		s.What = follow.Target{Kind: follow.Query, ID: q.String()}
	default:
		t, err := follow.ParseTarget(string(follow.Category), *in.Category)
		if err != nil {
			return Spec{}, apperr.Refield(err, "category")
		}
		if in.CrossLists == nil || *in.CrossLists {
			return Spec{}, apperr.InvalidField("cross_lists", `only a category's cross-lists can be muted: send {"category": %q, "cross_lists": false}; to see none of %s, unfollow it`, t.ID, t.ID)
		}
		s.What = t
	}
	if in.CrossLists != nil && in.Category == nil {
		return Spec{}, apperr.InvalidField("cross_lists", "cross_lists goes with a category: {\"category\": \"cs.LG\", \"cross_lists\": false}")
	}
	if in.HasFollow || in.FollowKind != "" || in.FollowID != "" {
		t, err := follow.ParseRef("follow", in.FollowKind, in.FollowID)
		if err != nil {
			return Spec{}, err
		}
		s.Scope = &t
	}
	return s, nil
}

// targetOfKey is follow.TargetFromKey for a stored key; a key it does not
// know (a category since retired from the taxonomy) keeps its text.
func targetOfKey(kind Kind, key string) follow.Target {
	if t, err := follow.TargetFromKey(key); err == nil {
		return t
	}
	k, id, _ := strings.Cut(key, ":")
	if kind == Category {
		return follow.Target{Kind: follow.Category, ID: id}
	}
	return follow.Target{Kind: follow.Kind(k), ID: id}
}
