// Package inboxsql is how package match reads package inbox's table
// (paper_states, migration 00033) in statements of its own: fragments
// named and documented here, which package inbox owns with the table
// (docs/ARCHITECTURE.md, Rules). It is a package of its own because inbox
// imports match (MarkAllRead selects the papers it marks).
//
// A fragment's parameters are SQL expressions of the caller's statement
// (column references, $n), never input: the caller builds its statement
// once, at package initialisation.
package inboxsql

// Table is the table of users' paper states: (user_id, paper_id) primary
// key, state 'read' or 'done'; no row means unread.
const Table = "paper_states"

// Marked is true when user user marked paper paper read or done: one probe
// of paper_states' primary key. The alias it introduces (ps) is local to
// its subquery.
func Marked(user, paper string) string {
	return `EXISTS (SELECT 1 FROM ` + Table + ` ps WHERE ps.user_id = ` + user + ` AND ps.paper_id = ` + paper + `)`
}

// MarkedInRangesSQL selects (user_id, paper_ids) of the papers users
// marked read or done, per user $1[i] those with ids from $2[i] to $3[i]
// (bigint arrays of one length, one element per user), one row per user
// with any, its ids in one array, ascending: one range scan of
// paper_states' primary key per user, reading only that user's states of
// papers in the range (a window's candidates are mostly recent papers, so
// the user's states of older papers are not read). An array per user rather than a row per
// paper: a digest batch's 3,150 marks as 50 rows took half the time to
// run and send (300 runs through psql at scale M: 1.45 against 2.74 ms).
const MarkedInRangesSQL = `
	SELECT u.user_id, ps.ids FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(user_id, lo, hi)
	CROSS JOIN LATERAL (
		SELECT array_agg(ps.paper_id ORDER BY ps.paper_id) AS ids FROM ` + Table + ` ps WHERE ps.user_id = u.user_id AND ps.paper_id BETWEEN u.lo AND u.hi
	) ps
	WHERE ps.ids IS NOT NULL`
