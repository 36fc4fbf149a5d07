#!/usr/bin/env bash
# mutations.sh [PATTERN] — small mutations of core lines, each of which must
# fail the tests of its own package (not only those of a package above it).
#
# Every mutation is an exact text substitution in one file that must match
# exactly once: when the source changed so that it matches no more (or
# twice), the script fails and the mutation must be brought up to date. They
# are applied one at a time to a scratch copy of the working tree (its
# tracked and untracked files, not the ignored ones), never to the tree
# itself, and each runs only its package's tests (go test -count=1 ./pkg/).
# Every package is first tested unmutated. PATTERN (an extended regular
# expression) runs only the mutations whose name matches it.
#
# It prints a table: mutation, package, caught / MISSED / BROKEN (the mutant
# did not compile). It exits non-zero when one is missed or broken, when a
# substitution no longer applies, or when a package fails unmutated.
set -euo pipefail
export LC_ALL=C # substitutions count bytes
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pattern="${1:-}"

names=() pkgs=() files=() olds=() news=()
# mutation NAME PACKAGE FILE OLD NEW
mutation() { names+=("$1") pkgs+=("$2") files+=("$3") olds+=("$4") news+=("$5"); }

# The validator cache (feeds/validators.go).
mutation validator-ignores-high-seq feeds feeds/validators.go \
	'ok && e.version == st.Version && e.highSeq == st.HighSeq {' 'ok && e.version == st.Version {'
mutation validator-modified-earlier feeds feeds/validators.go 'at.After(mod)' 'at.Before(mod)'
mutation validator-older-head-replaces feeds feeds/validators.go 'old.version < e.version ||' 'old.version != e.version ||'
mutation validator-over-capacity feeds feeds/validators.go 'len(sh.m) >= v.perShard {' 'len(sh.m) > v.perShard {'
# The SSRF guard (channels/guard.go).
mutation guard-no-unmap channels channels/guard.go 'a = a.Unmap().WithZone("")' 'a = a.WithZone("")'
mutation guard-single-label channels channels/guard.go 'if !strings.Contains(lh, ".") || localTLDs[tld] {' 'if localTLDs[tld] {'
mutation guard-no-cgnat channels channels/guard.go $'\tnetip.MustParsePrefix("100.64.0.0/10"),      // CGNAT (RFC 6598)\n' ''
mutation guard-no-ipv6-reserved channels channels/guard.go 'netip.MustParsePrefix("4000::/2"),' 'netip.MustParsePrefix("4000::/128"),'
mutation guard-no-6to4 channels channels/guard.go $'\tnetip.MustParsePrefix("2002::/16"),     // 6to4: embeds any IPv4 address\n' ''
mutation guard-no-idna channels channels/guard.go 'return idna.Lookup.ToASCII(host)' '_ = idna.Lookup; return strings.ToLower(host), nil'
mutation guard-arpa-public channels channels/guard.go ', "arpa": true}' '}'
mutation guard-dial-unchecked channels channels/guard.go 'if err != nil || Internal(a) {' 'if err != nil || !a.IsValid() {'
# JWT verification (auth/jwt.go).
mutation jwt-lifetime-from-now auth auth/jwt.go $'\tif tc.IssuedAt != nil {\n\t\tstart = tc.IssuedAt.Time\n\t}\n' ''
mutation jwt-no-leeway auth auth/jwt.go $'\t\tjwt.WithLeeway(v.leeway),\n' ''
mutation jwt-cap-off-by-one auth auth/jwt.go 'life > v.maxLife {' 'life > v.maxLife+time.Second {'
# The search parser (search/query.go).
mutation search-one-letter-words search search/query.go 'utf8.RuneCountInString(fold) < 2 }' 'utf8.RuneCountInString(fold) < 1 }'
mutation search-common-alternative search search/query.go $'\t\t\tif n.op == opOr {\n\t\t\t\treturn nil, &Error{Pos: k.pos' $'\t\t\tif false {\n\t\t\t\treturn nil, &Error{Pos: k.pos'
mutation search-exclusions-only search search/query.go 'if !positive(root) {' 'if false {'
# The read replica (database/replica.go).
mutation replica-freshness-flipped database database/replica.go $'\t\t\tif !ok {\n\t\t\t\treturn errStale' $'\t\t\tif ok {\n\t\t\t\treturn errStale'
mutation replica-bounded-before-check database database/replica.go '(r.lagging.Load() || !r.checked.Load())' 'r.lagging.Load()'
mutation replica-lag-flipped database database/replica.go 'pg_current_wal_lsn()) < $1::pg_lsn' 'pg_current_wal_lsn()) > $1::pg_lsn'
mutation replica-answer-is-failure database database/replica.go $'\tcase isAnswer(err):' $'\tcase false:'
mutation replica-down-ignored database database/replica.go $'\tcase !r.Up():' $'\tcase false:'
mutation replica-one-kind database database/replica.go $'\tif fresh == nil {\n\t\tst = &r.stats[Bounded]\n\t}\n' ''

# Mutes, applied for every surface (match/mutes.go).
mutation mutes-scoped-drops match match/mutes.go 'case r.scope == "" || r.scope == only:' 'case true:'
mutation mutes-cross-list-any match match/mutes.go 'add(paper.Key{Key: r.key, Cross: true}, r)' 'add(paper.Key{Key: r.key}, r)'
mutation mutes-one-id-of-the-person match match/mutes.go $'\t\t\t\tr.keys[personKey] = true\n' ''
mutation mutes-totals-count-muted match match/mutes.go 'r.Total = max(r.Total-dropped, n)' 'r.Total = max(r.Total, n)'
mutation mutes-feed-left-short match match/mutes.go $'\treturn dropped > 0\n' $'\treturn false\n'
mutation mutes-window-selected-twice match match/mutes.go 'if m != nil && bounded(q) && m.users[q.UserID] {' 'if false {'
mutation mutes-stale-view match match/muteviews.go 'if v, ok := c.c.get(id); ok && v.version == version {' 'if v, ok := c.c.get(id); ok {'
mutation mutes-compiled-again match match/mutes.go $'\tcompiledMutes.put(key, q)\n' ''
mutation mutes-key-bits-skip match match/mutes.go 'um.keyBits.add(h)' 'um.keyBits.add(h + 1)'
mutation mutes-key-hash-skip match match/mutes.go 'for _, kr := range um.byKey[c.keyHashes[i]] {' 'for _, kr := range um.byKey[c.keyHashes[i]+1] {'
# Signed links and JWTs have one spelling: no line break inside (auth).
mutation links-line-break-skipped auth auth/links.go '|| strings.ContainsAny(tok, "\r\n") {' '{'
mutation jwt-line-break-skipped auth auth/jwt.go "return !(r >= 'A' && r <= 'Z' ||" "return r == ' ' && !(r >= 'A' && r <= 'Z' ||"
# Chats' texts cut near their limits, signed links under a PUBLIC_URL with a query.
mutation chat-pack-size-unbounded channels channels/format.go '|| size != nil && len(cur) > 0 && sum+k > max {' '{'
mutation chat-text-cut-from-whole channels channels/format.go 'n, e = limit, text.Shorten(s, limit)' 'n = limit'
mutation links-base-query-dropped account account/addresses.go 'if base != nil && base.RawQuery == "" && base.Fragment == "" && !base.ForceQuery {' 'if base != nil {'
# A search's word ids kept per vocab, and the documents' signatures (search/doc.go).
mutation search-ids-other-vocab search search/doc.go 'r != nil && r.v == d.vocab && (' 'r != nil && ('
mutation search-signature-misses-abstract search search/doc.go 'for _, f := range []*field{&d.title, &d.abstract, &d.authors} {' 'for _, f := range []*field{&d.title, &d.authors} {'
mutation search-title-signature-misses search search/doc.go 'setBits(d.titleSig[:], d.title.ids)' 'setBits(d.titleSig[:], d.authors.ids)'

# Read state, the pause and snooze (issue #27): each delivery rule in its owner.
mutation unread-keeps-marked match match/controls.go "return \`NOT (q.unread AND \` + inboxsql.Marked(\"q.user_id\", paper) + \`)\`" "return \`true\`"
mutation unread-marks-not-read match match/controls.go 'm[user], ids = ids, nil' 'ids = nil'
mutation unread-marks-unsorted match inbox/inboxsql/inboxsql.go 'array_agg(ps.paper_id ORDER BY ps.paper_id)' 'array_agg(ps.paper_id ORDER BY ps.paper_id DESC)'
mutation unread-window-keeps-marked match match/window.go '&& !marked(ids, c.id) {' '&& len(ids) >= 0 {'
mutation unread-window-any-query match match/window.go $'\t\tif q.Unread {\n\t\t\tids = read[q.UserID]' $'\t\tif true {\n\t\t\tids = read[q.UserID]'
mutation pause-never-ends notify notify/pause.go 'WHERE d.pause_ends_at <= $1' 'WHERE d.pause_ends_at <= $1 AND false'
mutation snooze-ignored match match/snooze.go 'if f := &follows[q.UserID][j].Follow; f.Snoozed(q.At) {' 'if f := &follows[q.UserID][j].Follow; false && f.Snoozed(q.At) {'

# Best first's order and its models' decoding (ranking/score.go, relevance/encode.go).
mutation ranking-ties-reversed ranking ranking/score.go 'return cmp.Compare(x.at, y.at)' 'return cmp.Compare(y.at, x.at)'
mutation relevance-zero-delta-decoded relevance relevance/encode.go 'if delta == 0 || delta > math.MaxUint32-uint64(prev) {' 'if delta > math.MaxUint32-uint64(prev) {'
# A batch's scores through its lexicon (relevance/lexicon.go, ranking/score.go).
mutation relevance-lexicon-stale-weight relevance relevance/lexicon.go $'\t\ts.w[p] = 0\n' $'\t\t_ = p\n'
mutation relevance-lexicon-radix-pass relevance relevance/lexicon.go 'at[2][k>>(32+2*bits)&(buckets-1)]++' 'at[2][k>>(32+bits)&(buckets-1)]++'
mutation ranking-lexicon-other-paper ranking ranking/score.go 'us.sc[i] = dense.Score(at[id])' 'us.sc[i] = dense.Score(at[id]^1)'
mutation ranking-first-persons-take-all ranking ranking/model.go 'per := perPerson(len(persons))' 'per := ownPerPerson'
mutation relevance-lexicon-pays-later relevance relevance/lexicon.go 'return scored >= 4*features' 'return scored >= 5*features'
mutation relevance-fixed-bits-other-word relevance relevance/model.go 'm.fixedBits[m.feats[i]>>6&7] |= 1 << (m.feats[i] & 63)' 'm.fixedBits[m.feats[i]>>7&7] |= 1 << (m.feats[i] & 63)'
mutation relevance-fixed-bits-learned relevance relevance/model.go $'\t\tif k != kindLearned {\n\t\t\tm.fixedBits' $'\t\tif k == kindPerson {\n\t\t\tm.fixedBits'
mutation relevance-learn-keeps-smallest relevance relevance/train.go $'\t\t\tcase x > y:\n\t\t\t\treturn -1\n\t\t\tcase x < y:\n\t\t\t\treturn 1' $'\t\t\tcase x < y:\n\t\t\t\treturn -1\n\t\t\tcase x > y:\n\t\t\t\treturn 1'
mutation relevance-learn-keeps-all relevance relevance/train.go $'\t\tkeep = keep[:max(p.MaxLearned, 0)]\n' ''
mutation search-missed-lookup-kept-forever search search/doc.go '(r.size < 0 || r.size == d.vocab.n.Load())' 'true'
mutation search-vocab-size-not-counted search search/vocab.go $'\t\tv.n.Add(1)\n' ''
mutation relevance-lexicon-pays-less relevance relevance/lexicon.go 'return len(m.feats) <= 2*features' 'return len(m.feats) <= 3*features'
mutation relevance-lexicon-directory-first-only relevance relevance/lexicon.go 'if g := l.feats[p]; g >= f {' 'if g := l.feats[p]; true {'
mutation relevance-lexicon-directory-bucket-late relevance relevance/lexicon.go 'int(l.feats[k]>>l.dirShift) < d {' 'int(l.feats[k]>>l.dirShift) <= d {'
# A user's shown papers explained at once, through the lexicon's weights (relevance/lexicon.go, ranking/score.go).
mutation relevance-scorer-explain-function-words relevance relevance/lexicon.go $'\t\t\tif !nameable[k] {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tif x := float32(w[p]' $'\t\t\tif len(nameable) < 0 {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tif x := float32(w[p]'
mutation relevance-weights-kept-stale relevance relevance/lexicon.go $'\ts.clear()\n\ts.set = append(s.set, w.set...)' $'\ts.set = append(s.set[:0], w.set...)'
mutation ranking-whymany-last-model ranking ranking/score.go $'\ts.UseWeights(b.weights[userID])\n' $'\t_ = b.weights\n'
# A digest run's batches share a lexicon (ranking/lexicon.go).
mutation ranking-kept-lexicon-stale-vectors ranking ranking/lexicon.go 'if i, ok := at[id]; ok && lex.Vector(i) == vecs[id] {' 'if _, ok := at[id]; ok {'
mutation ranking-feedback-cursor-unchecked ranking ranking/feedback.go 'if id < 1 || at.Before(oldestCursor) || at.After(time.Now().Add(24*time.Hour)) {' 'if id < -1<<62 {'
mutation inbox-page-not-deeper inbox inbox/list.go 'if len(res.Papers) < want || deeper <= want || tries == 2 {' 'if true {'
mutation notify-pause-resent-restarts notify notify/pause.go 'if kept && cur.Pause.StartsAt != nil && !now.Before(*cur.Pause.StartsAt) {' 'if false {'
mutation inbox-best-shown-ignored inbox inbox/list.go $'\t\tif c.shown != nil {\n' $'\t\tif false {\n'
mutation ranking-whymany-reasons-uncapped ranking ranking/score.go 'out[i] = all[start:len(all):len(all)]' 'out[i] = all[start:len(all)]'
mutation relevance-likes-skipped relevance relevance/explain.go $'\tif len(m.likes) == 0 {\n\t\treturn out\n\t}\n\tp := &v.paper' $'\tif len(m.likes) != 0 {\n\t\treturn out\n\t}\n\tp := &v.paper'
mutation ranking-kept-lexicon-never-grows ranking ranking/lexicon.go 'if 2*held < len(ids) {' 'if true {'
mutation ranking-kept-lexicon-always-grows ranking ranking/lexicon.go 'if 2*held < len(ids) {' 'if false {'
mutation ranking-kept-lexicon-never-reused ranking ranking/lexicon.go $'\tif held == len(ids) {\n\t\treturn lex, at' $'\tif held < 0 {\n\t\treturn lex, at'
# The "Why first" line and the text part's wrap (notify/templates.go), a best-first plan's choice (notify/best.go).
mutation notify-wrap-counts-bytes notify notify/templates.go 'n := utf8.RuneCount(w)' 'n := len(w)'
mutation notify-oneline-keeps-unicode-spaces notify notify/templates.go $'\t\t\t\tr, n := utf8.DecodeRuneInString(s[j:])\n\t\t\t\tif unicode.IsSpace(r) {' $'\t\t\t\tr, n := utf8.DecodeRuneInString(s[j:])\n\t\t\t\tif r == \'\\n\' {'
mutation notify-escape-no-amp notify notify/templates.go "'&': \"&amp;\", " ''
mutation notify-oneline-misses-nbsp notify notify/templates.go '0xC2: lineMaybe, ' ''
mutation notify-oneline-double-space notify notify/templates.go "if s[i+1] == ' ' {" "if s[i+1] == '\\t' {"
mutation notify-choose-no-share notify notify/best.go 'share := (n + len(follows) - 1) / len(follows)' 'share := n'
# The authors' decoder (paper/authors.go): equal to encoding/json.
mutation paper-authors-raw-escapes paper paper/authors.go "case c == '\\\\' || c < 0x20:" 'case c < 0x20:'
mutation paper-authors-nil-ids paper paper/authors.go 'ids := []string{}' 'var ids []string'
# The digest figures' share of newest first, paired by round (bench/digest.go).
mutation bench-share-least-round bench bench/digest.go 'return Paired{Share: ratios[n/2],' 'return Paired{Share: ratios[0],'

# A migration that meets a busy table is tried again (migrations/migrations.go).
mutation migrate-gives-up-at-once migrations migrations/migrations.go $'\t\tif !lockConflict(err) {\n' $'\t\tif true {\n'

# The fediverse's key rotation, 401s, digests and inbox checks (issue #29), and its settings.
mutation ap-key-active-at-once fediverse fediverse/service.go 'active := now.Add(KeyActivationDelay)' 'active := now'
mutation ap-key-cached-past-activation fediverse fediverse/service.go 'if next != nil && next.Before(s.keyUntil) {' 'if false && next != nil {'
mutation ap-401-final fediverse fediverse/ledger.go 'return retry // record fails it after UnauthorizedAttempts' 'return failed'
mutation ap-401-retried-forever fediverse fediverse/ledger.go 'if n >= UnauthorizedAttempts {' 'if false && n >= UnauthorizedAttempts {'
mutation ap-rfc9421-no-content-digest fediverse fediverse/rfc9421.go 'r.Body); err != nil {' 'r.Body); false && err != nil {'
mutation ap-follow-inbox-unchecked fediverse fediverse/inbox.go 'if _, err := s.guard.CheckURL("inbox", personal); err != nil {' 'if _, err := s.guard.CheckURL("inbox", personal); false && err != nil {'
mutation ap-blocked-domains-unchecked config config/config.go 'if d == "" || strings.ContainsAny(d, "/:@ *") {' 'if d == "" {'
# Found trying the service from outside (2026-12-07).
mutation link-lenient-base64 auth auth/links.go 'var strictB64 = base64.RawURLEncoding.Strict()' 'var strictB64 = base64.RawURLEncoding'
mutation jwt-lenient-base64 auth auth/jwt.go $'\t\tjwt.WithStrictDecoding(),\n' ''
mutation prefs-next-digest-sent-period notify notify/prefs.go 'if !taken {' 'if true {'
mutation pause-releases-at-its-end notify notify/pause.go 'return `coalesce(d.pause_starts_at <= ` + at + `, false)`' 'return `coalesce(d.pause_starts_at <= ` + at + ` AND (d.pause_ends_at IS NULL OR d.pause_ends_at > ` + at + `), false)`'
mutation email-non-ascii notify notify/prefs.go 'if r < 0x20 || r == 0x7f || r > 0x7e {' 'if r < 0x20 || r == 0x7f {'
mutation arxivid-any-month internal/arxivid internal/arxivid/arxivid.go 'if yymm%100 < 1 || yymm%100 > 12 {' 'if false {'
mutation push-dates-unbounded harvest harvest/decode.go 't.Before(earliestDate) || t.After(latest)' 'false'
mutation explain-names-single-letters relevance relevance/explain.go $'for c := \'a\'; c <= \'z\'; c++ {' $'for c := \'a\'; c < \'a\'; c++ {'
mutation feed-empty-dated-1970 feeds feeds/service.go 'return modified.UTC().Truncate(time.Second)' 'return time.Time{}'
mutation open-link-head-records httpapi httpapi/settings_opened.go 'if r.Method == http.MethodGet {' 'if true {'
mutation pause-holds-after-its-end notify notify/pause.go 'return pr.NextDigestAt.Before(*p.EndsAt), p.EndsAt' 'return true, p.EndsAt'
# The papers' renderings kept across a Digester's batches (notify/partscache.go), in a cache of two generations (internal/gencache).
mutation parts-cache-stale-title notify notify/partscache.go 'a.Title == b.Title && ' ''
mutation gencache-one-generation internal/gencache internal/gencache/gencache.go 'v, ok := c.prev[k]' 'v, ok := c.cur[k]'
# The papers' details kept by the process (match/details.go).
mutation details-ignore-version match match/details.go 'ok && d.version == ver {' 'ok && (d.version == ver || ver != 0) {'
mutation arxivid-normalized-with-version internal/arxivid internal/arxivid/arxivid.go 'm != nil && m[2] == ""' 'm != nil'
# A paper's version is read in runs of ids (catalog/load.go): the papers between the ids asked for are not theirs.
mutation versions-of-neighbours catalog catalog/load.go 'if _, ok := slices.BinarySearch(want, id); ok {' 'if true {'
# An ended pause is no ongoing pause, and no later one replaces it while its catch-up waits (notify/pause.go).
mutation pause-ended-kept notify notify/pause.go 'kept := cur.Pause != nil && !ended && cur.Pause.From.Equal(from)' 'kept := cur.Pause != nil && cur.Pause.From.Equal(from)'
mutation pause-later-drops-catchup notify notify/pause.go 'if ended && from.After(today) {' 'if false {'
# A settings page names a field by its label, a hidden one not at all (httpapi/formlabels.go).
mutation page-problem-paths httpapi httpapi/formlabels.go 'message = pathLabels.Replace(message)' ''
mutation page-problem-hidden httpapi httpapi/formlabels.go $'	case label == "":
		return message
' ''
# The text part's word wrap of an ASCII line breaks at its last space that fits (notify/templates.go), and a vector's institutions are explained from its own features (relevance).
mutation wrap-ascii-breaks-early notify notify/templates.go "s = bytes.LastIndexByte(line[:room+1], ' ')" "s = bytes.LastIndexByte(line[:room], ' ')"
mutation explain-no-institutions relevance relevance/vector.go 'v.instFeats, v.citeFeats = featuresOf(nsInstitution, p.Institutions), featuresOf(nsCite, p.Cites)' 'v.citeFeats = featuresOf(nsCite, p.Cites)'
mutation explain-no-cites relevance relevance/vector.go 'v.instFeats, v.citeFeats = featuresOf(nsInstitution, p.Institutions), featuresOf(nsCite, p.Cites)' 'v.instFeats = featuresOf(nsInstitution, p.Institutions)'
# A reason never names a function word, nor a co-author of a person the paper is by; persons come first (relevance/explain.go).
mutation explain-names-modals relevance relevance/explain.go '"has have had having do does did done can could may might must shall should will would " +' '"has have had having do does did done " +'
mutation explain-coauthors-of-its-person relevance relevance/explain.go 'if !ok || kd != kindCoauthor || slices.Contains(on[:nOn], of) {' 'if !ok || kd != kindCoauthor {'
mutation marked-less-stays relevance relevance/model.go $'	if itself {\n\t\ts -= MarkedLessDrop\n\t}' ''
# Marks move their topic: a category's net marks, from the third, less offset by the follows' papers there (relevance/train.go).
mutation topic-marks-ignored relevance relevance/train.go '	topics := markedTopics(p, examples)' '	topics := map[uint32]float32(nil)'
mutation topic-less-ignores-follows relevance relevance/train.go 'share(c.Less-c.More-c.Follows)' 'share(c.Less-c.More)'
mutation topic-from-the-first-mark relevance relevance/train.go 'max(n-2, 0))/float32(p.TopicMarks-2)' 'max(n, 0))/float32(p.TopicMarks)'
mutation topic-more-counts-as-less relevance relevance/train.go $'\t\t\tc.More++' $'\t\t\tc.Less++'
mutation topics-share-unsaid relevance relevance/train.go '		c.Share = max(less, more)' '		c.Share = 1'
mutation topics-weakest-first relevance relevance/train.go 'cmp.Compare(abs32(b.Weight), abs32(a.Weight))' 'cmp.Compare(abs32(a.Weight), abs32(b.Weight))'
# What the marks moved is kept with the model and said (ranking/model.go,
# httpapi/feedback.go, httpapi/settings_feedback.go).
mutation topics-not-stored ranking ranking/model.go '	topics := t.topics' '	topics := []relevance.Topic(nil)'
mutation topics-never-behind ranking ranking/model.go "SELECT coalesce(topics, '[]'), changes > trained FROM" "SELECT coalesce(topics, '[]'), false FROM"
mutation topics-effect-always-more relevance relevance/train.go $'\tcase t.Fewer():\n\t\treturn EffectFewer' $'\tcase false:\n\t\treturn EffectFewer'
mutation topics-page-part-unsaid httpapi httpapi/settings_feedback.go 'if t.Share < 1 && !t.Held() {' 'if t.Share < 0 && !t.Held() {'
mutation topics-page-pending-unsaid httpapi httpapi/settings_feedback.go '	d.Topics, d.TopicsPending = topicLines(topics), pending' '	d.Topics, d.TopicsPending = topicLines(topics), pending && false'
mutation not-this-person-not-learnt httpapi app/wire.go '	s.registry.OnNotThisPerson(s.ranking.FollowChanged)' '	_ = s.ranking.FollowChanged'
mutation not-this-person-hooks-unrun identity identity/lookup.go $'\t\tfor _, h := range r.disputed {' $'\t\tfor _, h := range r.disputed[:0] {'
mutation topics-held-unlisted relevance relevance/train.go 'if c.Weight != 0 || share(c.Less) > 0 || share(c.More) > 0 {' 'if c.Weight != 0 {'
mutation topics-effect-held-as-more relevance relevance/train.go $'\tcase t.Held():\n\t\treturn EffectNone' $'\tcase false:\n\t\treturn EffectNone'
mutation topics-page-follows-unsaid httpapi httpapi/settings_feedback.go 'if t.Follows > 0 && t.Less > t.More {' 'if false {'
# The feedback list's Undo comes back to the page it is on (httpapi/settings_feedback.go).
mutation feedback-undo-to-first-page httpapi httpapi/settings_feedback.go $'\t\t\tdone += "&feedback=" + url.QueryEscape(page)' $'\t\t\t_ = url.QueryEscape(page)'
mutation feedback-undo-page-unbounded httpapi httpapi/settings_feedback.go 'page != "" && len(page) <= maxFeedbackCursor' 'page != ""'
mutation outcome-stays-at-top httpapi web/static/settings.js "if (heading) { heading.insertAdjacentElement('afterend', outcome); }" 'if (heading) { }'
mutation ranking-reads-categories-as-stored ranking ranking/corpus.go 'Categories: primaryFirst(p.PrimaryCategory, p.Categories)' 'Categories: p.Categories'
mutation refused-undo-shows-first-page httpapi httpapi/settings.go 'if r.Method == http.MethodPost && r.URL.Path == "/settings/feedback" {' 'if false {'
mutation undo-offers-nothing-back httpapi httpapi/settings_feedback.go $'\t\t\tdone += "&undone=" + url.QueryEscape(r.PostFormValue("arxiv_id")) + "&was=" + url.QueryEscape(string(was))' $'\t\t\t_ = was'
mutation restore-offered-over-feedback httpapi httpapi/settings_feedback.go 'if fb == nil || err != nil || fb.Value != ranking.None {' 'if fb == nil || err != nil {'
mutation restore-back-to-old-page httpapi httpapi/settings_feedback.go $'\t\tif val != ranking.None {\n\t\t\t// A value given' $'\t\tif false {\n\t\t\t// A value given'
# A feedback link mutes only what its page offers: an unfollowed author, through a "Less like this" link (httpapi/feedback_pages.go).
mutation feedback-link-mutes-through-any httpapi httpapi/feedback_pages.go $'	if v != ranking.Less {\n\t\treturn "", apperr.InvalidField' $'	if false {\n\t\treturn "", apperr.InvalidField'
mutation feedback-link-mutes-followed httpapi httpapi/feedback_pages.go $'	if !offered {\n' $'	if offered && !offered {\n'
# A digest's outcome says how many papers it listed (notify/send.go).
mutation outcome-shown-is-total notify notify/send.go 'out.Shown = content.shown()' 'out.Shown = content.Total'
# The inbox names the paper a feedback button was pressed for, with an undo (httpapi/inbox_page.go).
mutation inbox-feedback-no-undo httpapi httpapi/inbox_page.go 'if done == "feedback" {' 'if false {'
# A null where the document has none is refused; where a route takes no body, null is none (httpapi/jsonstrict.go, api.go).
mutation json-null-anywhere httpapi httpapi/jsonstrict.go 'case s.nullable || readsNull(t):' 'case true:'
mutation json-null-body-refused-where-optional httpapi httpapi/api.go $'	case "null":
		// Where a route takes no body, null is none, as it always was (a
		// client\'s "no options"); elsewhere it is not an object (checkJSON).
		if optional {' $'	case "null":
		if false {'
mutation feedback-page-muted-unsaid httpapi httpapi/feedback_pages.go 'authors[i].Muted = true' 'authors[i].Muted = false'
# A researcher mute is read with every key of its person; no other kind probes the registry (match/mutes.go).
mutation mute-person-keys-unread match match/mutes.go "CASE WHEN m.kind = 'researcher' THEN m.key END" "CASE WHEN m.kind = 'category' THEN m.key END"

# substitute FILE OLD NEW: replaces the one occurrence of OLD in FILE.
substitute() {
	local f=$1 old=$2 new=$3 s rest n
	IFS= read -r -d '' s <"$f" || true
	rest=${s//"$old"/}
	n=$(((${#s} - ${#rest}) / ${#old}))
	if [ "$n" -ne 1 ]; then
		echo "mutations: ${f#"$scratch"/tree/}: the text to mutate matches $n times, not once; bring the mutation up to date:" >&2
		printf '%s\n' "$old" >&2
		return 1
	fi
	printf '%s' "${s/"$old"/"$new"}" >"$f"
}

DATABASE_URL="$("$root/scripts/pg-ensure.sh" postgres)"
export DATABASE_URL
scratch="$(mktemp -d "${TMPDIR:-/tmp}/followfeed-mutations.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/tree" "$scratch/orig" "$scratch/logs"
(cd "$root" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$scratch/tree"
cd "$scratch/tree"

picked=()
for i in "${!names[@]}"; do
	if [ -z "$pattern" ] || [[ ${names[$i]} =~ $pattern ]]; then
		picked+=("$i")
	fi
done
[ ${#picked[@]} -gt 0 ] || { echo "mutations: no mutation matches $pattern" >&2; exit 1; }

# Every substitution must apply before anything runs.
for i in "${picked[@]}"; do
	f=${files[$i]}
	[ -f "$scratch/orig/${f//\//_}" ] || cp "$f" "$scratch/orig/${f//\//_}"
	substitute "$f" "${olds[$i]}" "${news[$i]}" || exit 1
	cp "$scratch/orig/${f//\//_}" "$f"
done

# -trimpath: the scratch tree's path changes every run; without it nothing
# it builds would come from the build cache.
gotest() { go test -trimpath -count=1 -timeout 5m "./$1/" >"$2" 2>&1; }

for pkg in $(printf '%s\n' "${picked[@]}" | while read -r i; do echo "${pkgs[$i]}"; done | sort -u); do
	echo "mutations: testing $pkg unmutated" >&2
	if ! gotest "$pkg" "$scratch/logs/${pkg//\//_}.baseline"; then
		tail -n 30 "$scratch/logs/${pkg//\//_}.baseline" >&2
		echo "mutations: $pkg fails its tests unmutated" >&2
		exit 1
	fi
done

bad=0
results=()
for i in "${picked[@]}"; do
	name=${names[$i]} pkg=${pkgs[$i]} f=${files[$i]} log="$scratch/logs/${names[$i]}"
	echo "mutations: $name" >&2
	substitute "$f" "${olds[$i]}" "${news[$i]}"
	if gotest "$pkg" "$log"; then
		verdict=MISSED
	elif grep -q -e '\[build failed\]' -e '\[setup failed\]' "$log"; then
		verdict=BROKEN
	else
		verdict=caught
	fi
	cp "$scratch/orig/${f//\//_}" "$f"
	if [ "$verdict" != caught ]; then
		bad=1
		tail -n 20 "$log" >&2
	fi
	results+=("$(printf '%-32s %-10s %s' "$name" "$pkg" "$verdict")")
done

printf '%-32s %-10s %s\n' mutation package result
printf '%s\n' "${results[@]}"
if [ "$bad" -ne 0 ]; then
	echo "mutations: some mutations were not caught by their package's tests" >&2
fi
exit "$bad"
