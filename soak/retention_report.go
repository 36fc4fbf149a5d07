package soak

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What a table grows with.
const (
	classPapers = "papers kept"
	classUsers  = "users and follows"
	classFixed  = "a few rows"
	classTime   = "time: pruned"
)

// rtClass is a table's class, its retention and how many days of rows the
// retention keeps (0: not pruned).
type rtClass struct {
	class, retention string
	days             float64
}

// rtClasses classify every table of the schema (README, Operations:
// Retention); a table missing here is reported as unclassified and fails
// the scenario.
var rtClasses = map[string]rtClass{
	"papers": {classPapers, "kept", 0}, "paper_keys": {classPapers, "kept", 0}, "search_hits": {classPapers, "kept", 0},
	"paper_search_hits": {classPapers, "kept", 0}, "identities": {classPapers, "kept", 0}, "identity_keys": {classPapers, "kept", 0},
	"ap_notes": {classPapers, "per paper kept; daily summaries 90 days", 0}, "ap_activities": {classPapers, "with their notes", 0},

	"users": {classUsers, "kept", 0}, "user_feeds": {classUsers, "kept", 0}, "suppressions": {classUsers, "kept", 0},
	"follows": {classUsers, "kept", 0}, "follow_counts": {classUsers, "kept", 0}, "instant_follows": {classUsers, "kept", 0},
	"digest_schedules": {classUsers, "kept", 0}, "channels": {classUsers, "kept", 0}, "identity_disputes": {classUsers, "kept", 0},
	"identity_splits": {classUsers, "kept", 0}, "ap_actors": {classUsers, "kept", 0}, "ap_inboxes": {classUsers, "kept", 0},
	"ap_followers": {classUsers, "kept", 0},
	// A user's own choices, kept while they have an account, erased with them.
	"feedback": {classUsers, "kept", 0}, "ranking_models": {classUsers, "kept", 0}, "paper_states": {classUsers, "kept", 0},
	"inbox_settings": {classUsers, "kept", 0}, "mutes": {classUsers, "kept", 0},

	"match_state": {classFixed, "one row", 0}, "harvest_state": {classFixed, "a row per source", 0}, "ap_keys": {classFixed, "a row per key rotation", 0},
	"goose_db_version": {classFixed, "a row per migration", 0}, "river_leader": {classFixed, "River's", 0}, "river_queue": {classFixed, "River's", 0},
	"river_client": {classFixed, "River's", 0}, "river_client_queue": {classFixed, "River's", 0}, "river_migration": {classFixed, "River's", 0},
	"river_notification": {classFixed, "River's", 0},

	"key_seq_times":         {classTime, "30 days + a floor row", 30},
	"digests":               {classTime, "90 days (not open rows, nor a user's newest instant and other row)", 90},
	"harvest_days":          {classTime, "90 days (and a source's newest 14)", 90},
	"harvest_checks":        {classTime, "45 days", 45},
	"confirmation_requests": {classTime, "1 day", 1},
	"channel_events":        {classTime, "30 days after final", 30},
	"channel_attempts":      {classTime, "with their events, ≤ 100 a channel", 30},
	"channel_papers":        {classTime, "90 days", 90},
	"channel_reveals":       {classTime, "15 minutes", 0},
	"ap_deliveries":         {classTime, "30 days after final", 30},
	"ap_remote_keys":        {classTime, "30 days", 30},
	"ap_seen_signatures":    {classTime, "13 hours", 0},
	"river_job":             {classTime, "completed 1 day, cancelled and discarded 7 days", 1},
}

// rtSize is one table's rows and size at one point.
type rtSize struct {
	name       string
	rows, size int64
}

// rtMeasure counts every table's rows (count(*)) and size
// (pg_total_relation_size: heap, indexes, TOAST).
func rtMeasure(ctx context.Context, pool *pgxpool.Pool) ([]rtSize, error) {
	rows, err := pool.Query(ctx, `
		SELECT c.relname, n.nspname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname IN ('public', 'river') ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	var out []rtSize
	var schemas []string
	var t rtSize
	var schema string
	if _, err := pgx.ForEachRow(rows, []any{&t.name, &schema, &t.size}, func() error {
		out, schemas = append(out, t), append(schemas, schema)
		return nil
	}); err != nil {
		return nil, err
	}
	for i := range out {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schemas[i], out[i].name}.Sanitize()).Scan(&out[i].rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rtMeasureTables is rtMeasure of the named tables of the public schema.
func rtMeasureTables(ctx context.Context, pool *pgxpool.Pool, names []string) ([]rtSize, error) {
	out := make([]rtSize, len(names))
	for i, n := range names {
		out[i].name = n
		id := pgx.Identifier{"public", n}.Sanitize()
		if err := pool.QueryRow(ctx, `SELECT count(*), pg_total_relation_size($1::regclass) FROM `+id, id).Scan(&out[i].rows, &out[i].size); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rtOrphans counts, in the tables that grow with the papers kept, rows
// of a paper or researcher that is not kept (want 0 each): search hits
// listing a paper not stored, paper_search_hits rows of one, seqs listed
// for a paper with no search_hits row holding them, identities without
// an id.
func rtOrphans(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	out := map[string]int64{}
	for _, q := range []struct{ name, sql string }{
		{"search_hits listing a paper not stored", `SELECT count(*) FROM search_hits h
			WHERE EXISTS (SELECT 1 FROM unnest(h.paper_ids) u(id) WHERE NOT EXISTS (SELECT 1 FROM papers p WHERE p.id = u.id))`},
		{"paper_search_hits of a paper not stored", `SELECT count(*) FROM paper_search_hits s WHERE NOT EXISTS (SELECT 1 FROM papers p WHERE p.id = s.paper_id)`},
		{"paper_search_hits seqs without their search_hits row", `SELECT count(*) FROM paper_search_hits s CROSS JOIN LATERAL unnest(s.seqs) u(seq)
			WHERE NOT EXISTS (SELECT 1 FROM search_hits h WHERE h.seq = u.seq AND s.paper_id = ANY(h.paper_ids))`},
		{"identities without an id", `SELECT count(*) FROM identities i WHERE NOT EXISTS (SELECT 1 FROM identity_keys k WHERE k.identity_id = i.id)`},
	} {
		var n int64
		if err := pool.QueryRow(ctx, q.sql).Scan(&n); err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		out[q.name] = n
	}
	return out, nil
}

// rtGrowth writes the tables that grow with the papers kept at mid-year
// and after the year, and checks that they grew with the papers: each
// holds rows (the year's searches and registrations are there), the
// matches' tables in proportion to the papers (rows per paper within 25%
// between the two points), the registry exactly the researchers
// registered (those who authored a kept paper), and nothing of a paper
// or researcher not kept; the prune leaves them whole (checked with the
// other kept tables).
func rtGrowth(res *Result, y *rtYear, before []rtSize, orphans map[string]int64) {
	end := map[string]rtSize{}
	for _, t := range before {
		end[t.name] = t
	}
	endPapers := end["papers"].rows
	per := func(rows, papers int64) float64 { return 1000 * float64(rows) / float64(max(papers, 1)) }
	var b strings.Builder
	fmt.Fprintf(&b, "The tables that grow with the papers kept, at mid-year (%d papers) and after the year (%d papers):\n\n", y.midPapers, endPapers)
	b.WriteString("| table | rows at mid-year | per 1,000 papers | rows after the year | per 1,000 papers | size at mid-year | size after the year | bytes per paper after the year |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	grew := true
	var detail []string
	for _, m := range y.mid {
		t := end[m.name]
		fmt.Fprintf(&b, "| `%s` | %d | %.0f | %d | %.0f | %s | %s | %.0f |\n", m.name, m.rows, per(m.rows, y.midPapers), t.rows, per(t.rows, endPapers),
			mib(m.size), mib(t.size), float64(t.size)/float64(max(endPapers, 1)))
		if m.rows == 0 || t.rows <= m.rows {
			grew = false
			detail = append(detail, fmt.Sprintf("%s %d → %d", m.name, m.rows, t.rows))
		}
		switch m.name {
		case "paper_keys", "search_hits", "paper_search_hits":
			if r := per(t.rows, endPapers) / per(m.rows, y.midPapers); r < 0.8 || r > 1.25 {
				grew = false
				detail = append(detail, fmt.Sprintf("%s: %.2f× the rows per paper of mid-year", m.name, r))
			}
		}
	}
	res.Tables = append(res.Tables, b.String())
	registry := end["identities"].rows == y.identities && end["identity_keys"].rows == y.identityKeys
	var orph []string
	var nOrph int64
	for _, k := range slices.Sorted(maps.Keys(orphans)) {
		orph = append(orph, fmt.Sprintf("%s %d", k, orphans[k]))
		nOrph += orphans[k]
	}
	res.check("the papers' tables grew with the papers, and hold nothing else", grew && registry && nOrph == 0 && y.hits > 0,
		"%d query matches of the year in %d search_hits rows (%d after the year); %d researchers registered with %d ids, %d identities and %d identity_keys rows after the year; rows per paper of the matches' tables within 25%% of mid-year's%s; %s",
		y.hits, y.hitRows, end["search_hits"].rows, y.identities, y.identityKeys, end["identities"].rows, end["identity_keys"].rows,
		strings.Join(append([]string{""}, detail...), "; not: "), strings.Join(orph, ", "))
}

// rtQuoted names tables for VACUUM (River's with their schema).
func rtQuoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		schema := "public"
		if strings.HasPrefix(n, "river_") {
			schema = "river"
		}
		out[i] = pgx.Identifier{schema, n}.Sanitize()
	}
	return out
}

// rtOld is, per pruned table, the rows past its retention that are not
// documented keepers (want 0), and a description of what is kept.
type rtOld struct {
	left map[string]int64
	kept map[string]string
}

// rtPastRetention counts, in every pruned table, the rows past its
// retention that the prune should have deleted: each with the owner's
// criterion, written out again here.
func rtPastRetention(ctx context.Context, pool *pgxpool.Pool) (rtOld, error) {
	o := rtOld{left: map[string]int64{}, kept: map[string]string{}}
	for _, q := range []struct{ table, sql string }{
		{"key_seq_times", `SELECT greatest(count(*) - 1, 0) FROM key_seq_times WHERE at < now() - interval '30 days'`},
		{"digests", `SELECT count(*) FROM digests g WHERE g.created_at < now() - interval '90 days'
			AND g.state IN ('sent', 'failed', 'skipped', 'unknown')
			AND EXISTS (SELECT 1 FROM digests n WHERE n.user_id = g.user_id AND n.id > g.id AND (n.kind = 'instant') = (g.kind = 'instant'))`},
		{"harvest_days", `SELECT count(*) FROM harvest_days d WHERE d.day < current_date - 90
			AND d.day < (SELECT n.day FROM harvest_days n WHERE n.source = d.source ORDER BY n.day DESC OFFSET 13 LIMIT 1)`},
		{"harvest_checks", `SELECT count(*) FROM harvest_checks WHERE day < current_date - 45`},
		{"confirmation_requests", `SELECT count(*) FROM confirmation_requests WHERE created_at < now() - interval '1 day'`},
		{"channel_events", `SELECT count(*) FROM channel_events WHERE state <> 'pending' AND updated_at < now() - interval '30 days'`},
		{"channel_attempts", `SELECT coalesce(sum(greatest(n - 100, 0)), 0) FROM (SELECT count(*) AS n FROM channel_attempts GROUP BY channel_id) x`},
		{"channel_papers", `SELECT count(*) FROM channel_papers WHERE sent_at < now() - interval '90 days'`},
		{"ap_deliveries", `SELECT count(*) FROM ap_deliveries WHERE state <> 'pending' AND updated_at < now() - interval '30 days'`},
		{"river_job", `SELECT count(*) FROM river.river_job WHERE (state = 'completed' AND finalized_at < now() - interval '1 day')
			OR (state IN ('cancelled', 'discarded') AND finalized_at < now() - interval '7 days')`},
	} {
		var n int64
		if err := pool.QueryRow(ctx, q.sql).Scan(&n); err != nil {
			return o, fmt.Errorf("%s: %w", q.table, err)
		}
		o.left[q.table] = n
	}
	var floor, keepers int64
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM key_seq_times WHERE at < now() - interval '30 days'),
		(SELECT count(*) FROM digests WHERE created_at < now() - interval '90 days')`).Scan(&floor, &keepers); err != nil {
		return o, err
	}
	o.kept["key_seq_times"] = fmt.Sprintf("%d floor row", floor)
	o.kept["digests"] = fmt.Sprintf("%d older rows kept (users' newest, open)", keepers)
	return o, nil
}

// rtPushToday pushes today's papers through POST /v1/papers (the
// product's ingest) and waits for their match jobs.
func rtPushToday(ctx context.Context, c *client, y *rtYear) error {
	tok, err := mint("soak-rt-host", "", "papers:write")
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(y.today, 1000) {
		var recs []map[string]any
		for _, p := range chunk {
			var authors []map[string]any
			for _, a := range p.Authors {
				authors = append(authors, map[string]any{"name": a.Name, "ids": a.IDs})
			}
			recs = append(recs, map[string]any{"arxiv_id": p.ArxivID, "title": p.Title, "abstract": p.Abstract, "authors": authors,
				"categories": p.Categories, "primary_category": p.PrimaryCategory, "published": p.SubmittedAt.Format(time.DateOnly)})
		}
		if _, err := c.must(ctx, "POST", "/v1/papers", tok, recs, 200); err != nil {
			return err
		}
	}
	return nil
}

// rtDigestsToday makes every daily digest due now and checks they go out
// once each, under today's period, and nothing else does.
func rtDigestsToday(ctx context.Context, e *env, db *freshDB, res *Result, sink *mailSink, users []*rtUser) error {
	// The match jobs of today's papers first (their instant alerts are
	// due in 10 minutes and not waited for).
	if _, err := waitFor(ctx, 2*time.Minute, time.Second, func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND finalized_at IS NULL`)
		return n == 0, err
	}); err != nil {
		return err
	}
	var maxID int64
	if err := db.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM digests`).Scan(&maxID); err != nil {
		return err
	}
	daily := 0
	for _, u := range users {
		if !u.instant {
			daily++
		}
	}
	// Made due on purpose, in the soak's own SQL: the users' digest hour
	// may be hours away.
	if _, err := db.pool.Exec(ctx, `UPDATE digest_schedules SET next_at = now() WHERE frequency = 'daily'`); err != nil {
		return err
	}
	today := "daily:" + time.Now().UTC().Format(time.DateOnly)
	var rows, todays, open, sent int64
	ok, err := waitFor(ctx, 3*time.Minute, time.Second, func() (bool, error) {
		err := db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE period = $2), count(*) FILTER (WHERE state IN ('pending', 'sending')),
			count(*) FILTER (WHERE state = 'sent') FROM digests WHERE id > $1 AND kind = 'daily'`, maxID, today).Scan(&rows, &todays, &open, &sent)
		return err == nil && todays == int64(daily) && open == 0, err
	})
	if err != nil {
		return err
	}
	var perUser int64
	if err := db.pool.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM digests WHERE id > $1 AND kind = 'daily' GROUP BY user_id) x`, maxID).Scan(&perUser); err != nil {
		return err
	}
	res.check("the day's digests went out once each, none of an old period", ok && rows == todays && perUser == 1,
		"%d daily users made due: %d new rows, %d of today's period (%s), at most %d per user, %d open, %d sent", daily, rows, todays, today, perUser, open, sent)
	ids, total := sink.snapshot()
	dups := 0
	for _, n := range ids {
		if n > 1 {
			dups++
		}
	}
	sentIDs, err := messageIDs(ctx, db, fmt.Sprintf("id > %d AND state = 'sent'", maxID))
	if err != nil {
		return err
	}
	missing := 0
	for _, id := range sentIDs {
		if ids[id] == 0 {
			missing++
		}
	}
	res.check("no message twice", dups == 0 && missing == 0, "%d messages at the SMTP sink, %d Message-IDs received more than once, %d sent rows whose message the sink never saw", total, dups, missing)
	e.logf("retention: %d digests sent today", sent)
	return nil
}

// rtCheckFeeds fetches the sampled users' feeds with the validators they
// had before the prune: a feed whose newest paper is 11 months old (the
// dormant researcher's) answers 304 to both and its Last-Modified is no
// later; the others have today's papers (a 200, a new ETag).
func rtCheckFeeds(ctx context.Context, c *client, res *Result, sample []*rtUser) {
	var dormant, dormant304, others, othersNew int
	var detail []string
	var slowest time.Duration
	for _, u := range sample {
		inm := c.do(ctx, "GET", u.feed, "", nil, http.Header{"If-None-Match": {u.etag}})
		ims := c.do(ctx, "GET", u.feed, "", nil, http.Header{"If-Modified-Since": {u.lastMod}})
		plain := c.do(ctx, "GET", u.feed, "", nil, nil)
		slowest = max(slowest, inm.dur, ims.dur, plain.dur)
		before, _ := http.ParseTime(u.lastMod)
		after, err := http.ParseTime(plain.header.Get("Last-Modified"))
		if u.dormant {
			dormant++
			if inm.status == 304 && ims.status == 304 && err == nil && !after.After(before) && plain.header.Get("ETag") == u.etag {
				dormant304++
			} else {
				detail = append(detail, fmt.Sprintf("%s: %d/%d, Last-Modified %s → %s", u.sub, inm.status, ims.status, u.lastMod, plain.header.Get("Last-Modified")))
			}
			continue
		}
		others++
		if inm.status == 200 && plain.header.Get("ETag") != u.etag && err == nil && after.After(before) {
			othersNew++
		}
	}
	res.check("feeds keep their validators across the prune", dormant > 0 && dormant304 == dormant && othersNew == others,
		"%d feeds whose newest paper is 11 months old (its key_seq_times row merged into the floor): %d answer 304 to the ETag and to the Last-Modified of before the prune, with no later Last-Modified%s; %d feeds with today's papers: %d changed; slowest of these %d responses %s", dormant, dormant304,
		strings.Join(append([]string{""}, detail...), "; "), others, othersNew, 3*len(sample), ms(slowest))
}

// rtCombine puts the measurements side by side.
func rtCombine(before, after, final, compact []rtSize, y *rtYear) []rtTable {
	by := func(s []rtSize) map[string]rtSize {
		m := map[string]rtSize{}
		for _, t := range s {
			m[t.name] = t
		}
		return m
	}
	a, f, c := by(after), by(final), by(compact)
	var out []rtTable
	for _, b := range before {
		cl, ok := rtClasses[b.name]
		if !ok {
			cl = rtClass{class: "unclassified", retention: "?"}
		}
		t := rtTable{name: b.name, class: cl.class, retention: cl.retention, rowsBefore: b.rows, sizeBefore: b.size,
			rowsAfter: a[b.name].rows, sizeAfter: f[b.name].size}
		if cl.class == classTime {
			t.sizeCompact = c[b.name].size
		}
		if perDay := y.perDay[b.name]; perDay > 0 && cl.days > 0 {
			t.kept = fmt.Sprintf("≈ %.0f", perDay*cl.days)
		}
		out = append(out, t)
	}
	order := map[string]int{classTime: 0, classPapers: 1, classUsers: 2, classFixed: 3}
	slices.SortStableFunc(out, func(x, y rtTable) int {
		if d := order[x.class] - order[y.class]; d != 0 {
			return d
		}
		return int(y.sizeBefore - x.sizeBefore)
	})
	return out
}

// mib writes a size in MiB (KiB below one).
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// rtReport writes the tables, figures and checks.
func rtReport(res *Result, tables []rtTable, y *rtYear, old rtOld, loadTook, pruneTook time.Duration) {
	var b strings.Builder
	b.WriteString("| table | grows with | retention | rows after the year | rows after the prune | at most (rows a day × retention) | size after the year | after the prune and VACUUM | the kept rows (VACUUM FULL) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	totals := map[string][3]int64{}
	unclassified, changed := []string{}, []string{}
	bounded := true
	var boundDetail []string
	for _, t := range tables {
		compact := "—"
		if t.class == classTime {
			compact = mib(t.sizeCompact)
		}
		kept := t.kept
		if kept == "" {
			kept = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %s | %s | %s | %s |\n", t.name, t.class, t.retention, t.rowsBefore, t.rowsAfter, kept,
			mib(t.sizeBefore), mib(t.sizeAfter), compact)
		tot := totals[t.class]
		tot[0] += t.sizeBefore
		tot[1] += t.sizeAfter
		if t.class == classTime {
			tot[2] += t.sizeCompact
		} else {
			tot[2] += t.sizeAfter
		}
		totals[t.class] = tot
		switch {
		case t.class == "unclassified":
			unclassified = append(unclassified, t.name)
		case (t.class == classPapers || t.class == classUsers) && t.rowsAfter != t.rowsBefore:
			changed = append(changed, fmt.Sprintf("%s %d → %d", t.name, t.rowsBefore, t.rowsAfter))
		}
		// Bounded: what a retention keeps is its days' rows (with room
		// for today's and the documented keepers), never the year's.
		if per, cl := y.perDay[t.name], rtClasses[t.name]; t.class == classTime && per > 0 && cl.days > 0 {
			limit := int64(per*(cl.days+1)) + 2*rtUsers + 1000
			if t.rowsAfter > limit {
				bounded = false
			}
			boundDetail = append(boundDetail, fmt.Sprintf("%s %d ≤ %d", t.name, t.rowsAfter, limit))
		}
	}
	res.Tables = append(res.Tables, b.String())
	var sum strings.Builder
	sum.WriteString("| grows with | size after the year | after the prune and VACUUM | the kept rows (VACUUM FULL of the pruned tables) |\n| --- | --- | --- | --- |\n")
	for _, cl := range []string{classTime, classPapers, classUsers, classFixed} {
		tot := totals[cl]
		fmt.Fprintf(&sum, "| %s | %s | %s | %s |\n", cl, mib(tot[0]), mib(tot[1]), mib(tot[2]))
	}
	res.Tables = append(res.Tables, sum.String())

	res.figure("the year", "%d days ending yesterday: %d papers with %d key rows in %d writes, %d query matches in %d search_hits rows, %d researchers registered (%d ids), %d digest ledger rows, %d channel events, %d finished River jobs",
		rtDays, y.papers, y.keys, y.writes, y.hits, y.hitRows, y.identities, y.identityKeys, y.ledger, y.events, y.jobs)
	res.figure("loading the year", "%s", secs(loadTook))
	res.figure("the prune", "%s from the worker's start until every prune job had completed and River's cleaner had caught up", secs(pruneTook))
	var left []string
	allZero := true
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for k := range old.left {
			if !yield(k) {
				return
			}
		}
	}) {
		left = append(left, fmt.Sprintf("%s %d", t, old.left[t]))
		allZero = allZero && old.left[t] == 0
	}
	res.check("no row past its table's retention", allZero, "rows the prune should have deleted, by the owners' criteria: %s; kept on purpose: %s, %s",
		strings.Join(left, ", "), old.kept["key_seq_times"], old.kept["digests"])
	res.check("time-growing tables hold their retention's rows, not the year's", bounded, "rows after the prune ≤ rows a day × (retention + 1 day) + keepers: %s", strings.Join(boundDetail, ", "))
	res.check("tables that grow with papers and users untouched by the prune", len(changed) == 0, "rows changed across the prune: %s", noneOr(changed))
	res.check("every table classified", len(unclassified) == 0, "unclassified: %s", noneOr(unclassified))
	tt, tp := totals[classTime], totals[classPapers]
	res.Summary = fmt.Sprintf("a year: %d papers, %d search hits, %d researchers registered, %d ledger rows, %d channel events, %d River jobs; time-growing tables %s after the year, their kept rows %s after the prune; papers' tables %s; rows past retention left: %d",
		y.papers, y.hits, y.identities, y.ledger, y.events, y.jobs, mib(tt[0]), mib(tt[2]), mib(tp[1]), sumLeft(old))
}

// sumLeft is how many rows past their retention the prune left.
func sumLeft(o rtOld) int64 {
	var n int64
	for _, v := range o.left {
		n += v
	}
	return n
}
