package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/paper"
	"followfeed/ranking"
)

// The feedback links of digests, alerts, private feeds and push messages
// (account.Addresses.FeedbackURL): one user, one paper, one value each.
// GET /feedback/{token} shows the paper, what the link does, the paper's
// feedback now and a button; POST records the link's value (or, with
// action=undo, clears the paper's feedback) and shows the page again
// saying so, with the button that undoes it. The signed URL is the
// authority, as for the other links in mail: no session, no CSRF token;
// a forged, altered or revoked link is the bad-link page (404) and
// records nothing.

// maxPageAuthors is how many authors the feedback page names before "et al.".
const maxPageAuthors = 8

// feedbackPage is what feedback.html shows.
type feedbackPage struct {
	ArxivID, Title, AbsURL, Authors string
	// Value is the link's value; Label its button's words and Does what
	// recording it does.
	Value       ranking.Value
	Label, Does string
	// Now is the paper's feedback as it stands (ranking.None: none).
	Now      ranking.Value
	NowLabel string
	// Recorded: the link's value is the paper's feedback now (the page
	// offers undo instead of the button).
	Recorded bool
	// NotBy are the "Not by …?" links of a "less like this" link's page:
	// the user's researcher follows among the paper's authors.
	NotBy []notByLink
	// MuteAuthors are the "Not from this author" buttons of a "less like
	// this" link's page: the paper's authors with a researcher id (a mute
	// for every follow: action=mute, researcher=<id>).
	MuteAuthors []muteAuthor
}

// muteAuthor is one "Not from <Name>" button; Muted: the author is
// muted for every follow already (the page says so instead).
type muteAuthor struct {
	Name, ID string
	Muted    bool
}

// notByLink is one "Not by <Name>?" link (account.Addresses.DisputeURL).
type notByLink struct{ Name, URL string }

// valueDoes says what recording v does, on the link's page.
func valueDoes(v ranking.Value) string {
	switch v {
	case ranking.More:
		return "Papers like this one rank higher for you: in best-first digests, alerts and push messages, and in your ranked feed."
	case ranking.Less:
		return "Papers like this one rank lower for you: in best-first digests, alerts and push messages, and in your ranked feed."
	}
	return "The paper is kept in your feedback list (in your settings), and papers like it rank higher for you."
}

// feedbackLink resolves the request's feedback link: the link, its value,
// and the paper it names, live. Otherwise it has answered (the bad-link
// page, the withdrawn-paper page, an error) and ok is false.
func (p *EmailPages) feedbackLink(w http.ResponseWriter, r *http.Request) (l account.FeedbackLink, v ranking.Value, pp match.Paper, ok bool) {
	l, err := p.Addresses.CheckFeedbackLink(r.Context(), r.PathValue("token"))
	if err == nil {
		// The signer made the value; one it does not know is no link of ours.
		if v, err = ranking.ParseValue(l.Value); err != nil {
			err = auth.ErrBadLink
		}
	}
	if err != nil {
		p.badLink(w, r, err)
		return l, v, pp, false
	}
	papers, err := p.Matcher.LoadPapers(r.Context(), []int64{l.PaperID}, catalog.WithoutAbstract)
	if err != nil {
		writeError(w, r, p.Logger, err)
		return l, v, pp, false
	}
	if len(papers) == 0 {
		p.paperGone(w, r, "")
		return l, v, pp, false
	}
	return l, v, papers[0], true
}

// paperGone is the page of a link whose paper was withdrawn (or is no
// longer stored): 404, nothing recorded.
func (p *EmailPages) paperGone(w http.ResponseWriter, r *http.Request, arxivID string) {
	what := "The paper of this link"
	if arxivID != "" {
		what = "arXiv " + arxivID
	}
	renderPage(w, r, p.Logger, http.StatusNotFound, "message.html", page{Title: "This paper was withdrawn",
		Lines: []string{what + " was withdrawn or is no longer listed here, so there is nothing to record.",
			"Your feedback on other papers is unchanged."},
		Link: "/settings/account#feedback", LinkText: "Your feedback, in your settings"})
}

// feedbackLinkPage is GET /feedback/{token}: the page, changing nothing.
func (p *EmailPages) feedbackLinkPage(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	l, v, pp, ok := p.feedbackLink(w, r)
	if !ok {
		return
	}
	fb, err := p.Ranking.Get(r.Context(), l.UserID, pp.ArxivID)
	if p.feedbackFailed(w, r, pp, err) {
		return
	}
	p.showFeedback(w, r, l, v, pp, fb.Value, "")
}

// feedbackLinkPost is POST /feedback/{token}: records the link's value, or
// with action=undo clears the paper's feedback, then shows the page again.
func (p *EmailPages) feedbackLinkPost(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	l, v, pp, ok := p.feedbackLink(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, r, p.Logger, formError(err))
		return
	}
	set, flash := v, "Recorded: "+v.Label()+"."
	switch r.PostFormValue("action") {
	case "mute":
		status := http.StatusOK
		flash, err := p.muteAuthor(r, l, v, pp)
		if err != nil {
			// Refused (the mute limit, an id not the paper's): the page
			// again saying why, with the refusal's status.
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.Invalid {
				writeError(w, r, p.Logger, err)
				return
			}
			status, flash = statusFor(err), "Not muted — "+e.Message
		}
		fb, err := p.Ranking.Get(r.Context(), l.UserID, pp.ArxivID)
		if p.feedbackFailed(w, r, pp, err) {
			return
		}
		p.showFeedbackStatus(w, r, status, l, v, pp, fb.Value, flash)
		return
	case "", "record":
	case "undo":
		set, flash = ranking.None, "Undone: you have no feedback on this paper now."
	default:
		// Not one of the page's buttons: the page again (a person's
		// browser posted it), saying so, nothing recorded.
		fb, err := p.Ranking.Get(r.Context(), l.UserID, pp.ArxivID)
		if p.feedbackFailed(w, r, pp, err) {
			return
		}
		p.showFeedbackStatus(w, r, http.StatusUnprocessableEntity, l, v, pp, fb.Value,
			"Not recorded — this form's action must be record, undo or mute: use the buttons below.")
		return
	}
	fb, err := p.Ranking.Set(r.Context(), l.UserID, pp.ArxivID, set)
	if p.feedbackFailed(w, r, pp, err) {
		return
	}
	p.showFeedback(w, r, l, v, pp, fb.Value, flash)
}

// feedbackFailed answers err, if any: a paper withdrawn meanwhile is the
// withdrawn-paper page.
func (p *EmailPages) feedbackFailed(w http.ResponseWriter, r *http.Request, pp match.Paper, err error) bool {
	switch {
	case err == nil:
		return false
	case apperr.CodeOf(err) == apperr.NotFound:
		p.paperGone(w, r, pp.ArxivID)
	default:
		writeError(w, r, p.Logger, err)
	}
	return true
}

// showFeedback renders the link's page: the paper with its feedback now.
func (p *EmailPages) showFeedback(w http.ResponseWriter, r *http.Request, l account.FeedbackLink, v ranking.Value, pp match.Paper, now ranking.Value, flash string) {
	p.showFeedbackStatus(w, r, http.StatusOK, l, v, pp, now, flash)
}

// showFeedbackStatus is showFeedback with the response's status.
func (p *EmailPages) showFeedbackStatus(w http.ResponseWriter, r *http.Request, status int, l account.FeedbackLink, v ranking.Value, pp match.Paper, now ranking.Value, flash string) {
	d := feedbackPage{ArxivID: pp.ArxivID, Title: pp.Title, AbsURL: pp.AbsURL, Authors: authorList(pp.Authors),
		Value: v, Label: v.Label(), Does: valueDoes(v), Now: now, NowLabel: now.Label(), Recorded: now == v}
	if v == ranking.Less {
		notBy, followed, err := p.notBy(r, l, pp)
		if err != nil {
			writeError(w, r, p.Logger, err)
			return
		}
		d.NotBy = notBy
		if p.Mutes != nil {
			d.MuteAuthors = muteAuthors(pp.Authors, followed)
			if err := markMuted(r.Context(), p.Mutes, l.UserID, d.MuteAuthors); err != nil {
				writeError(w, r, p.Logger, err)
				return
			}
		}
	}
	renderPage(w, r, p.Logger, status, "feedback.html", page{Title: v.Label(), Flash: flash, Action: r.URL.Path, Data: d})
}

// notBy are the "Not by …?" links of a "less like this" page: a paper
// that reached the user through a researcher they follow may be "less"
// because it is not that person's at all. Each link is the digest's
// (DisputeURL), of the feedback link's user and epoch. followed holds
// the match keys of those follows (every id of each person).
func (p *EmailPages) notBy(r *http.Request, l account.FeedbackLink, pp match.Paper) (out []notByLink, followed map[string]bool, err error) {
	fs, err := p.followedAuthors(r, l, pp)
	if err != nil {
		return nil, nil, err
	}
	out = make([]notByLink, 0, len(fs))
	for _, f := range fs {
		out = append(out, notByLink{Name: researcherName(f, pp), URL: p.Addresses.DisputeURL(l.UserID, l.Epoch, pp.ArxivID, f.ID)})
	}
	return out, followedKeys(fs), nil
}

// followedAuthors are the link's user's researcher follows among pp's
// authors (any id of each).
func (p *EmailPages) followedAuthors(r *http.Request, l account.FeedbackLink, pp match.Paper) ([]follow.Expanded, error) {
	var ids []string
	for _, a := range pp.Authors {
		ids = append(ids, a.IDs...)
	}
	return p.Follows.Researchers(r.Context(), l.UserID, ids)
}

// followedKeys are the match keys of researcher follows fs: each follow's
// key and every id of its person (muteAuthors' followed).
func followedKeys(fs []follow.Expanded) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		out[f.Key] = true
		for _, k := range f.Keys {
			out[k] = true
		}
	}
	return out
}

// researcherName is what the user reads for a researcher follow beside a
// paper: their label, the registry's name, the name the paper gives the
// author it reached, else the id.
func researcherName(f follow.Expanded, pp match.Paper) string {
	switch {
	case f.Label != "":
		return f.Label
	case f.Name != "":
		return f.Name
	}
	keys := f.Keys
	if keys == nil {
		keys = []string{f.Key}
	}
	for _, k := range keys {
		if t, err := follow.TargetFromKey(k); err == nil {
			if name, ok := pp.AuthorName(t.ID); ok {
				return name
			}
		}
	}
	return f.ID
}

// authorList is a paper's authors as a line: at most maxPageAuthors names,
// then "et al.".
func authorList(as []paper.Author) string {
	names := make([]string, 0, min(len(as), maxPageAuthors))
	for i, a := range as {
		if i == maxPageAuthors {
			names = append(names, "et al.")
			break
		}
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}

// muteAuthors are the "Not from this author" buttons of a paper's page:
// its first maxPageAuthors authors that carry a researcher id (their
// first), each once, but for those the user follows (an id of theirs is
// one of followed, match keys): muting a person one follows took their
// papers away without a word; "Not by …?" or unfollowing is the way.
func muteAuthors(authors []paper.Author, followed map[string]bool) []muteAuthor {
	var out []muteAuthor
	for i, a := range authors {
		if i == maxPageAuthors {
			break
		}
		if len(a.IDs) > 0 && !followsAuthor(a.IDs, followed) {
			out = append(out, muteAuthor{Name: a.Name, ID: a.IDs[0]})
		}
	}
	return out
}

// markMuted marks the authors the user muted for every follow under the
// id the button names (a "Not from …" pressed before, on this page or
// elsewhere): the page says they are muted rather than offering the
// button again. One read of the user's mutes, none without an author.
func markMuted(ctx context.Context, mutes *mute.Service, userID int64, authors []muteAuthor) error {
	if len(authors) == 0 {
		return nil
	}
	ms, err := mutes.List(ctx, userID)
	if err != nil {
		return err
	}
	muted := map[string]bool{}
	for _, m := range ms {
		if m.Kind() == mute.Researcher && m.Scope == nil {
			muted[m.Key()] = true
		}
	}
	for i, a := range authors {
		if t, err := follow.ParseTarget(string(follow.Researcher), a.ID); err == nil && muted[t.Key()] {
			authors[i].Muted = true
		}
	}
	return nil
}

// followsAuthor says whether one of an author's ids is followed.
func followsAuthor(ids []string, followed map[string]bool) bool {
	for _, id := range ids {
		if t, err := follow.ParseTarget(string(follow.Researcher), id); err == nil && followed[t.Key()] {
			return true
		}
	}
	return false
}

// muteAuthor records a "less like this" page's "Not from this author"
// (action=mute, researcher=<id>): a mute of that researcher for every
// follow of the link's user. The id must be one of the paper's authors':
// the signed link names the paper, not who may be muted. The flash says
// what was done and where to undo it.
func (p *EmailPages) muteAuthor(r *http.Request, l account.FeedbackLink, v ranking.Value, pp match.Paper) (string, error) {
	if p.Mutes == nil {
		return "", apperr.InvalidField("action", "must be record or undo (the buttons of the link's page)")
	}
	// A link does what its page offers and no more: only a "Less like
	// this" link's page offers muting, and only of the paper's authors
	// the user does not follow (muteAuthors).
	if v != ranking.Less {
		return "", apperr.InvalidField("action", "must be record or undo: muting an author is offered on a “Less like this” link's page")
	}
	id := r.PostFormValue("researcher")
	name := ""
	for _, a := range pp.Authors {
		if slices.Contains(a.IDs, id) {
			name = a.Name
		}
	}
	if id == "" || name == "" {
		return "", apperr.InvalidField("researcher", "must be the id of one of the paper's authors (the page's buttons)")
	}
	fs, err := p.followedAuthors(r, l, pp)
	if err != nil {
		return "", err
	}
	followed := followedKeys(fs)
	offered := false
	for _, a := range pp.Authors {
		if slices.Contains(a.IDs, id) && !followsAuthor(a.IDs, followed) {
			offered = true
		}
	}
	if !offered {
		return "", apperr.InvalidField("researcher", "is someone you follow: to stop their papers, unfollow them in your settings, or say “Not by …?” if a paper is not theirs")
	}
	if err := muteResearcher(r.Context(), p.Mutes, l.UserID, id); err != nil {
		return "", err
	}
	return "Muted " + name + ": their papers leave your feeds, digests, alerts and push channels. Your mutes are in your settings.", nil
}

// muteResearcher mutes researcher id for every follow of the user: a
// "Not from …" button's mute, of a feedback link's page or the inbox.
func muteResearcher(ctx context.Context, mutes *mute.Service, userID int64, id string) error {
	sp, err := mute.Parse(mute.Input{Researcher: &id})
	if err != nil {
		return err
	}
	_, _, err = mutes.Create(ctx, userID, sp)
	return err
}
