// Package catalogsql is how packages below catalog read its tables in
// statements of their own: fragments named and documented here, which
// package catalog owns with the tables (docs/ARCHITECTURE.md, Rules). It is
// a package of its own, below follow, because follow names a followed
// paper by its stored title and package catalog imports follow; packages
// above catalog use catalog's own queries.go.
//
// A fragment's parameters are SQL expressions of the caller's statement
// (column references, $n), never input: the caller builds its statement
// once, at package initialisation.
package catalogsql

// PaperTitleOf is the stored title of the paper that key, a follow's match
// key, names ("paper:<arXiv id without version>", follow.Target.Key), as a
// scalar expression: NULL when key is not a paper's key or the paper is not
// stored (yet). Only a paper's key is probed (papers' unique index on
// arxiv_id): the subquery sits under CASE, which PostgreSQL evaluates only
// when reached, so every other key costs a comparison. The alias it
// introduces (pt) is local to its subquery.
func PaperTitleOf(key string) string {
	return `CASE WHEN starts_with(` + key + `, 'paper:') THEN (SELECT pt.title FROM papers pt WHERE pt.arxiv_id = substr(` + key + `, 7)) END`
}
