package feeds

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/identity/registrysql"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/relevance"
)

// Format is a feed syntax.
type Format string

// The formats, named by their URL extension.
const (
	Atom Format = "atom"
	RSS  Format = "rss"
	JSON Format = "json"
)

// Formats lists the feed formats in the order URLs are offered.
var Formats = []Format{Atom, RSS, JSON}

// ParseFormat maps a URL extension to a Format.
func ParseFormat(ext string) (Format, bool) {
	switch Format(ext) {
	case Atom, RSS, JSON:
		return Format(ext), true
	}
	return "", false
}

// ContentType is the media type a format is served with.
func (f Format) ContentType() string {
	switch f {
	case RSS:
		return ContentTypeRSS
	case JSON:
		return ContentTypeJSON
	}
	return ContentTypeAtom
}

// Render renders feed in format f.
func Render(f Format, feed Feed) ([]byte, error) {
	switch f {
	case RSS:
		return RenderRSS(feed)
	case JSON:
		return RenderJSON(feed)
	}
	return RenderAtom(feed)
}

// Limits of ?limit=.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Service builds feeds from matched papers.
type Service struct {
	tokens   *Tokens
	matcher  *match.Service
	follows  *follow.Service
	db       *database.DB
	base     *url.URL // PUBLIC_URL
	hub      string   // WEBSUB_HUB_URL, "" for none
	secret   []byte
	valid    *Validators
	personal Personal
}

// FeedbackLinks signs a user's one-click feedback link of a paper
// (account.Addresses implements it): one user, their link epoch, one
// paper (papers.id) and one value (package ranking's).
type FeedbackLinks interface {
	FeedbackURL(userID, epoch, paperID int64, value string) string
}

// Ranker ranks users' papers (ranking.Service implements it).
type Ranker interface {
	// RankPapers sorts a user's papers best first and returns the batch
	// that scored them.
	RankPapers(ctx context.Context, userID int64, papers []match.Paper) (*ranking.Batch, error)
	// Models returns the users' models, training a first one for each
	// user who has none.
	Models(ctx context.Context, userIDs []int64) (map[int64]*relevance.Model, error)
}

// Personal is what makes a private feed its user's beyond their matches.
type Personal struct {
	// Feedback signs the feedback links every private feed item carries
	// (More like this, Less like this, Save); nil: items carry none.
	Feedback FeedbackLinks
	// Ranking orders the ranked feed (/feeds/{token}/best.{atom,rss,json},
	// Request.Best); nil: there is no ranked feed (a not-found).
	Ranking Ranker
}

// Personalize sets what private feeds add to the matches: their items'
// feedback links and the ranked feed. Call it before the service serves.
func (s *Service) Personalize(p Personal) { s.personal = p }

// NewService returns the feed service. base is PUBLIC_URL; hub may be nil.
func NewService(db *database.DB, tokens *Tokens, m *match.Service, f *follow.Service, base, hub *url.URL, secret []byte) *Service {
	s := &Service{tokens: tokens, matcher: m, follows: f, db: db, base: base, secret: secret}
	s.valid = NewValidators(m.Head, DefaultValidatorEntries)
	if hub != nil {
		s.hub = hub.String()
	}
	return s
}

// Validator returns the validator (ETag parts and Last-Modified) of the
// private feeds of st's user: from this process's cache when st's version
// and high seq are those it was computed at, else from one statement on
// the primary (match.Service.Head).
func (s *Service) Validator(ctx context.Context, st State) (Validator, error) {
	return s.valid.Get(ctx, st)
}

// Validators returns the service's validator cache.
func (s *Service) Validators() *Validators { return s.valid }

// Tokens returns the token store the service resolves URLs with.
func (s *Service) Tokens() *Tokens { return s.tokens }

// HubURL is the configured WebSub hub ("" for none).
func (s *Service) HubURL() string { return s.hub }

// abs is the absolute URL of path, which is already escaped (a follow's
// id goes through url.PathEscape): it is set as the URL's RawPath so that
// String does not escape it a second time ("%22" becoming "%2522").
func (s *Service) abs(path string) string {
	u := *s.base
	raw := strings.TrimSuffix(u.EscapedPath(), "/") + path
	p, err := url.PathUnescape(raw)
	if err != nil { // not reached: callers escape what they add
		p = raw
	}
	u.Path, u.RawPath = p, raw
	return u.String()
}

// PrivateURL is the absolute URL of a private feed: all follows when only
// is nil, else the per-follow feed.
func (s *Service) PrivateURL(token string, f Format, only *follow.Target) string {
	if only == nil {
		return s.abs("/feeds/" + token + "." + string(f))
	}
	return s.abs("/feeds/" + token + "/" + string(only.Kind) + "/" + url.PathEscape(only.ID) + "." + string(f))
}

// BestURL is the absolute URL of the user's ranked feed: every follow's
// newest matches, best first for the user (Request.Best).
func (s *Service) BestURL(token string, f Format) string {
	return s.abs("/feeds/" + token + "/best." + string(f))
}

// OPMLURL is the absolute URL of the user's OPML subscription list: the
// combined feed only, or with perFollow one feed per follow (and not the
// combined one), so that neither list, imported, shows a paper twice.
func (s *Service) OPMLURL(token string, perFollow bool) string {
	u := s.abs("/feeds/" + token + ".opml")
	if perFollow {
		u += "?per_follow=1"
	}
	return u
}

// AboutURL is the alternate (rel="alternate", OPML htmlUrl) page of private
// feeds: a static page a feed reader fetches cheaply, with no redirect and
// no sign-in, saying what the feed is and where it is managed.
func (s *Service) AboutURL() string { return s.abs("/about") }

// PublicURL is the absolute URL of the public feed of t.
func (s *Service) PublicURL(t follow.Target, f Format) string {
	return s.abs("/feeds/" + string(t.Kind) + "/" + url.PathEscape(t.ID) + "." + string(f))
}

// Request selects what a feed shows.
type Request struct {
	Format Format
	Limit  int
	// Only restricts a private feed to one of the user's follows.
	Only *follow.Target
	// Best is the ranked feed: the newest Limit matches of every follow,
	// best first for the user (their ranking model; a user without one
	// gets a first one from their follows), each saying why it ranks.
	// Not with Only.
	Best bool
	// Unread leaves out the papers the user marked read or done
	// (?unread=1; match.Query.Unread): the newest Limit unread ones. A
	// change of read state bumps the feed version (package inbox), so the
	// ETag moves with it.
	Unread bool
}

// ParseLimit reads ?limit=: "" gives DefaultLimit; otherwise 1..MaxLimit.
func ParseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > MaxLimit {
			return 0, apperr.InvalidField("limit", "must be a whole number from 1 to %d", MaxLimit)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > MaxLimit {
		return 0, apperr.InvalidField("limit", "must be a whole number from 1 to %d", MaxLimit)
	}
	return n, nil
}

// feedAtLeast is the freshness check of a private feed read on a replica
// (database.DB.Read): the snapshot is fresh when the user's feed version in
// it is at least version and its high seq at least highSeq, the two the
// ETag was derived from on the primary. Both only grow; every change a
// feed can show either bumps the version (a follow edited, an identity
// link, a dispute, a token rotated) or writes key rows, which advance the
// high seq in the transaction that writes them (and rows at or below the
// high seq are all committed when it is), so such a snapshot holds
// everything that ETag promises. Two primary-key probes.
func feedAtLeast(userID, version, highSeq int64) *database.Fresh {
	return &database.Fresh{SQL: `
		SELECT f.version >= $2 AND ` + catalog.HighSeqSQL + ` >= $3 FROM ` + account.FeedsTable + ` f WHERE f.user_id = $1`,
		Args: []any{userID, version, highSeq}}
}

// Private builds the private feed of the user behind token (resolved to st
// by the caller; v is its Validator). A per-follow request for something
// the user does not follow is a not-found error.
//
// The follows and the matches are read in one snapshot, on the read replica
// when its snapshot holds at least v's version and high seq
// (feedAtLeast), else on the primary: the feed is never older than
// the ETag it is served with.
//
// Each item carries the user's feedback links (Personal.Feedback), signed
// with the link epoch read in the same round trip as the follows: every
// move of the epoch bumps the feed version (account.BumpFeeds), so the
// ETag moves with the links. A Best request orders the items by the
// user's ranking model (Personal.Ranking: one more statement, reading the
// model, after the render's transaction; the first ranking of a user
// without a model trains one).
func (s *Service) Private(ctx context.Context, token string, st State, v Validator, req Request) (Feed, error) {
	if req.Best && (req.Only != nil || s.personal.Ranking == nil) {
		return Feed{}, database.Missing("no such feed: the ranked feed is /feeds/{token}/best.atom (or .rss, .json), for all your follows")
	}
	var follows []follow.Follow
	var only *follow.Follow
	var res match.Result
	var epoch int64
	var finish func(context.Context, pgx.Tx) ([]match.Result, error)
	// BEGIN, the replica's freshness check, the follows, the link epoch
	// and the selection go in one round trip; the selection is restricted
	// by req.Only's key, which is the follow's if the user follows it
	// (else the answer is a not-found and the selection is dropped).
	first := func(b *pgx.Batch) {
		follow.QueueAllIn(b, st.UserID, func(fs []follow.Follow) { follows = fs })
		if s.personal.Feedback != nil {
			account.QueueLinkEpochIn(b, st.UserID, func(e int64) { epoch = e })
		}
		finish = match.QueueMatchedIn(b, []match.Query{{UserID: st.UserID, Only: req.Only, Limit: req.Limit, Unread: req.Unread}})
	}
	err := s.db.ReadBatch(ctx, feedAtLeast(st.UserID, v.Version, v.HighSeq), first, func(tx pgx.Tx) error {
		only = nil
		if req.Only != nil {
			for i := range follows {
				if follows[i].Key() == req.Only.Key() {
					only = &follows[i]
					break
				}
			}
			if only == nil {
				return database.Missing("no such feed: you do not follow %s (any more)", req.Only.DisplayName())
			}
		}
		rs, err := finish(ctx, tx)
		if err != nil {
			return err
		}
		res = rs[0]
		return nil
	})
	if err != nil {
		return Feed{}, err
	}
	labels := follow.ReasonLabels(follows)
	title := fmt.Sprintf("Papers from your %d follows", len(follows))
	if len(follows) == 1 {
		title = "Papers from your 1 follow"
	}
	feed := Feed{
		ID:       "tag:" + s.base.Hostname() + ",2026:feeds/" + s.opaqueUser(st.UserID),
		Title:    title,
		Subtitle: "New arXiv papers matching what you follow, newest first.",
		SelfURL:  s.PrivateURL(token, req.Format, req.Only),
		HTMLURL:  s.AboutURL(),
		Language: "en",
	}
	if only != nil {
		feed.ID += "/" + only.Key()
		feed.Title = targetTitle(*only, res.Papers)
		feed.Subtitle = "New arXiv papers for one of your follows, newest first."
	}
	var ranked *ranking.Batch
	if req.Best {
		if ranked, err = s.personal.Ranking.RankPapers(ctx, st.UserID, res.Papers); err != nil {
			return Feed{}, fmt.Errorf("ranking the feed of user %d: %w", st.UserID, err)
		}
		feed.ID += "/best"
		feed.Title += ", best first"
		feed.Subtitle = "New arXiv papers matching what you follow, best first for you: ranked by what you follow and the papers you marked."
		feed.SelfURL = s.BestURL(token, req.Format)
		feed.Ranked = true
	}
	if req.Unread {
		feed.ID += "/unread"
		feed.Title += ", unread"
		feed.SelfURL += "?unread=1"
	}
	feed.Items = make([]Item, 0, len(res.Papers))
	for _, p := range res.Papers {
		it := item(p, labels)
		if ranked != nil {
			it.Content = joinParagraphs(it.Content, why(ranked.Why(st.UserID, p.ID)))
		}
		if s.personal.Feedback != nil && p.ID != 0 {
			it.Feedback = make([]Link, len(ranking.Values))
			for i, val := range ranking.Values {
				it.Feedback[i] = Link{Label: val.Label(), URL: s.personal.Feedback.FeedbackURL(st.UserID, epoch, p.ID, string(val))}
			}
		}
		feed.Items = append(feed.Items, it)
	}
	feed.Updated = updated(feed.Items, v.Modified)
	return feed, nil
}

// FirstModel makes sure the user of the ranked feed's token has a ranking
// model before its validator is computed: a user without one (st.ModelAt
// zero, as LookupRanked read it) gets a first one trained from their
// follows (Ranker.Models: a cold start, the cost of a small training),
// and st is read again, so the first ETag already names the model the
// feed is ranked with. A user with a model costs nothing.
func (s *Service) FirstModel(ctx context.Context, token string, st State) (State, error) {
	if !st.ModelAt.IsZero() || s.personal.Ranking == nil {
		return st, nil
	}
	if _, err := s.personal.Ranking.Models(ctx, []int64{st.UserID}); err != nil {
		return st, fmt.Errorf("training the first ranking model of user %d: %w", st.UserID, err)
	}
	return s.tokens.LookupRanked(ctx, token)
}

// why is a ranked item's paragraph saying why it ranks where it does
// ("Ranked for you: with your co-author Ann One; about galaxy and
// cluster"), "" when the model has nothing to say.
func why(rs []relevance.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	texts := make([]string, len(rs))
	for i, r := range rs {
		texts[i] = r.Text()
	}
	return "Ranked for you: " + strings.Join(texts, "; ")
}

// joinParagraphs joins the non-empty ones of a and b as two paragraphs.
func joinParagraphs(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// PublicVersion is the change marker of a public feed: the newest seq of
// its keys (every key of its person or institution in the identity
// registry), replacement rows included (a new version changes the feed's
// title or dates), plus the identity's last change in microseconds (a link,
// merge, split or new name changes the feed without a new key row), and
// when the feed last changed (a few index probes and primary-key lookups),
// so conditional GETs need no feed query.
// It is read on the primary: the replica's render is checked against it.
func (s *Service) PublicVersion(ctx context.Context, t follow.Target) (int64, time.Time, error) {
	v, changed, err := publicVersion(ctx, s.db.Pool, t)
	if err != nil {
		return 0, time.Time{}, err
	}
	return v, changed, nil
}

// publicFresh is the freshness check of a public feed read on a replica:
// its snapshot's newest row of the key is at least (seq, modified_at), what
// the primary's PublicVersion answered (a feed with no rows, version 0, is
// as fresh as another with none).
func publicFresh(t follow.Target, seq int64, changed time.Time) *database.Fresh {
	return &database.Fresh{SQL: publicFreshSQL, Args: []any{t.Key(), seq, changed}}
}

// publicFreshSQL is publicFresh's statement.
var publicFreshSQL = `
		SELECT v > $2 OR (v = $2 AND (v = 0 OR changed >= $3))
		FROM (` + publicVersionSQL + `) pv(v, changed)`

// publicVersionSQL reads the version of the public feed of key $1 and when
// it last changed (PublicVersion; 0 and the epoch for a feed with no rows).
var publicVersionSQL = `
		WITH ks AS (
			` + registrysql.PersonKeys("$1") + `
		), ident AS (
			SELECT i.updated_at FROM ` + registrysql.IdentityOf("$1") + `
		), newest AS (
			SELECT pk.seq, p.modified_at
			FROM ks CROSS JOIN LATERAL (
				SELECT seq, paper_id FROM ` + catalog.KeysTable + ` pk WHERE pk.key = ks.key ORDER BY pk.seq DESC LIMIT 1) pk
			JOIN ` + catalog.PapersTable + ` p ON p.id = pk.paper_id
			ORDER BY pk.seq DESC LIMIT 1
		)
		SELECT coalesce((SELECT seq FROM newest), 0)
		         + coalesce((SELECT (extract(epoch FROM updated_at) * 1000000)::bigint FROM ident), 0),
		       greatest((SELECT modified_at FROM newest), (SELECT updated_at FROM ident), 'epoch'::timestamptz)`

func publicVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, t follow.Target) (int64, time.Time, error) {
	var v int64
	var changed time.Time
	if err := q.QueryRow(ctx, publicVersionSQL, t.Key()).Scan(&v, &changed); err != nil {
		return 0, time.Time{}, fmt.Errorf("reading version of the feed of %s: %w", t, err)
	}
	if v == 0 {
		return 0, time.Time{}, nil
	}
	return v, changed, nil
}

// OPML lists the user's feeds for import into a feed reader: by default the
// one combined feed of all follows; with perFollow one feed per follow
// instead (never both: imported together they would show each paper once
// per feed that matches it).
func (s *Service) OPML(ctx context.Context, token string, st State, perFollow bool) ([]byte, error) {
	if !perFollow {
		outlines := []OPMLOutline{{Title: "followfeed: all my follows", XMLURL: s.PrivateURL(token, Atom, nil), HTMLURL: s.AboutURL()}}
		return RenderOPML("followfeed subscriptions", "", st.ChangedAt, outlines)
	}
	follows, err := s.follows.All(ctx, st.UserID)
	if err != nil {
		return nil, err
	}
	outlines := make([]OPMLOutline, 0, len(follows))
	for _, f := range follows {
		t := f.Target
		name := f.OwnerName()
		outlines = append(outlines, OPMLOutline{Title: name, XMLURL: s.PrivateURL(token, Atom, &t), HTMLURL: htmlURL(t)})
	}
	return RenderOPML("followfeed subscriptions, one per follow", "", st.ChangedAt, outlines)
}

// Public builds the public feed of t: every paper carrying its key, newest
// first. Anyone may read it. seq and changed are what PublicVersion
// answered (the ETag and Last-Modified): the read replica renders it only
// when its snapshot has at least that, else the primary does.
func (s *Service) Public(ctx context.Context, t follow.Target, seq int64, changed time.Time, req Request) (Feed, error) {
	var papers []match.Paper
	err := s.db.Read(ctx, publicFresh(t, seq, changed), func(tx pgx.Tx) error {
		var err error
		papers, err = match.PublicIn(ctx, tx, t.Key(), req.Limit)
		return err
	})
	if err != nil {
		return Feed{}, err
	}
	// The registry's name titles a researcher's or institution's feed, the
	// stored title a paper's.
	name, err := s.follows.Name(ctx, t)
	if err != nil {
		return Feed{}, err
	}
	feed := Feed{
		ID:       "tag:" + s.base.Hostname() + ",2026:feeds/public/" + t.Key(),
		Title:    targetTitle(follow.Follow{Target: t, Name: name}, papers),
		Subtitle: "New arXiv papers, newest first.",
		SelfURL:  s.PublicURL(t, req.Format),
		HTMLURL:  htmlURL(t),
		HubURL:   s.hub,
		Language: "en",
	}
	// A public feed's items say nothing of anybody: no reasons, and no
	// feedback links (item never sets them).
	feed.Items = make([]Item, 0, len(papers))
	for _, p := range papers {
		it := item(p, nil)
		it.Content = ""
		feed.Items = append(feed.Items, it)
	}
	feed.Updated = updated(feed.Items, changed)
	return feed, nil
}

// opaqueUser names a user in feed ids without revealing the numeric id.
func (s *Service) opaqueUser(id int64) string {
	m := hmac.New(sha256.New, s.secret)
	fmt.Fprintf(m, "feed id %d", id)
	return hex.EncodeToString(m.Sum(nil))[:16]
}

// targetTitle says what the feed of one follow f (its owner's label, or
// the registry's or catalog's name: f.OwnerName) is: "New papers by
// Mingzhi Wen", "New papers in cs.LG — Machine Learning", "Updates to
// Attention Is All You Need". A researcher nobody named is named as on
// their newest paper.
func targetTitle(f follow.Follow, papers []match.Paper) string {
	switch f.Kind {
	case follow.Researcher:
		if f.Label == "" && f.Name == "" {
			return "New papers by " + researcherName(f.Target, papers)
		}
		return "New papers by " + f.OwnerName()
	case follow.Institution:
		return "New papers from " + f.OwnerName()
	case follow.Paper:
		return "Updates to " + f.OwnerName()
	}
	return "New papers in " + f.OwnerName()
}

// researcherName finds the researcher's name on their newest paper.
func researcherName(t follow.Target, papers []match.Paper) string {
	for _, p := range papers {
		for _, a := range p.Authors {
			for _, id := range a.IDs {
				if id == t.ID && a.Name != "" {
					return a.Name
				}
			}
		}
	}
	return t.ID
}

// htmlURL is a human page about t: arXiv listings for categories, the
// identifier's own page for researchers and institutions.
func htmlURL(t follow.Target) string {
	id := t.ID
	switch {
	case t.Kind == follow.Category:
		return "https://arxiv.org/list/" + id + "/new"
	case strings.HasPrefix(id, "orcid:"):
		return "https://orcid.org/" + strings.TrimPrefix(id, "orcid:")
	case strings.HasPrefix(id, "openalex:"):
		return "https://openalex.org/" + strings.TrimPrefix(id, "openalex:")
	case strings.HasPrefix(id, "ror:"):
		return "https://ror.org/" + strings.TrimPrefix(id, "ror:")
	case strings.HasPrefix(id, "s2:"):
		return "https://www.semanticscholar.org/author/" + strings.TrimPrefix(id, "s2:")
	case strings.HasPrefix(id, "dblp:"):
		return "https://dblp.org/pid/" + strings.TrimPrefix(id, "dblp:")
	}
	return ""
}

// ItemID is the stable id of a paper in every feed: it never changes across
// versions or renders.
func ItemID(arxivID string) string { return "tag:arxiv.org,1991:" + arxivID }

// EventItemID is the id of a paper's item when a followed paper's event put
// it in the feed (event is match.Paper.EventID: "v3", "published",
// "withdrawn", "cites:2202.02326"): each event is its own item, which a feed
// feed reader shows once, and it is as stable as ItemID.
func EventItemID(arxivID, event string) string {
	if event == "" {
		return ItemID(arxivID)
	}
	return ItemID(arxivID) + "/" + event
}

func item(p match.Paper, labels map[string]string) Item {
	it := Item{
		ID:         EventItemID(p.ArxivID, p.EventID()),
		Title:      p.Title,
		Summary:    p.Abstract,
		AbsURL:     p.AbsURL,
		PDFURL:     p.PDFURL,
		Categories: p.Categories,
		Published:  p.SubmittedAt,
		Updated:    p.UpdatedAt,
	}
	if p.Replaced && (len(p.Events) == 0 || p.Events[0].Kind == paper.EventVersion) {
		it.Title = fmt.Sprintf("%s (v%d)", p.Title, p.Version)
	}
	for _, a := range p.Authors {
		it.Authors = append(it.Authors, a.Name)
	}
	if len(p.Reasons) > 0 {
		var names []string
		for _, r := range p.Reasons {
			names = append(names, p.ReasonName(r, labels[r.Key()]))
		}
		it.Content = "Following: " + strings.Join(names, " · ")
	}
	return it
}

// updated is a feed's date: its newest item's, or, for a feed without
// items, modified, the validator's Last-Modified (the feed as of then, the
// same for every render of one ETag), where Render's fixed 1970 read as a
// feed dead for decades.
func updated(items []Item, modified time.Time) time.Time {
	if t := newest(items); !t.IsZero() {
		return t
	}
	return modified.UTC().Truncate(time.Second)
}

func newest(items []Item) time.Time {
	var t time.Time
	for _, it := range items {
		u := it.Updated
		if u.IsZero() {
			u = it.Published
		}
		if u.After(t) {
			t = u
		}
	}
	return t
}
