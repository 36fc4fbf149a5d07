// Package tables declares which package owns each table of the schema and
// finds the tables a statement names. The owner is the one package that
// writes a table (docs/ARCHITECTURE.md's package table, "writes tables");
// another package reads it only through the owner's functions or the
// owner's exported, commented SQL fragments, used by name (the Rules).
// TestOwnersOnly enforces it over every package the product binary links.
package tables

import (
	"strings"
	"unicode"
)

// Owner maps each table (and view) of the migrations to the package that
// owns it, by import path below the module ("followfeed/"). Every table of
// migrations/sql is here and nothing else (TestOwnerCoversTheMigrations);
// the package table of docs/ARCHITECTURE.md says the same
// (TestOwnerMatchesTheArchitecture).
var Owner = map[string]string{
	"users":                 "account",
	"user_feeds":            "account",
	"suppressions":          "account",
	"confirmation_requests": "account",

	"follows":       "follow",
	"follow_counts": "follow",

	"identities":        "identity",
	"identity_keys":     "identity",
	"identity_splits":   "identity",
	"identity_disputes": "identity",

	"papers":            "catalog",
	"paper_keys":        "catalog",
	"match_state":       "catalog",
	"key_seq_times":     "catalog",
	"search_hits":       "catalog",
	"paper_search_hits": "catalog",
	"search_matches":    "catalog", // a view over search_hits and paper_search_hits

	"harvest_state":  "harvest",
	"harvest_days":   "harvest",
	"harvest_checks": "harvest",

	// Written only by the triggers of migration 00020 (from follows,
	// digest_schedules and channels), read only by the match job.
	"instant_follows": "match",

	"digests":          "notify",
	"digest_schedules": "notify",

	"feedback":       "ranking",
	"ranking_models": "ranking",

	"paper_states":   "inbox",
	"inbox_settings": "inbox",
	"mutes":          "mute",

	"channels":         "channels",
	"channel_events":   "channels",
	"channel_attempts": "channels",
	"channel_papers":   "channels",
	"channel_reveals":  "channels",

	"ap_keys":            "fediverse",
	"ap_actors":          "fediverse",
	"ap_inboxes":         "fediverse",
	"ap_followers":       "fediverse",
	"ap_notes":           "fediverse",
	"ap_activities":      "fediverse",
	"ap_deliveries":      "fediverse",
	"ap_remote_keys":     "fediverse",
	"ap_seen_signatures": "fediverse",
}

// RiverSchema's tables (river.river_job, …) are River's: only package
// worker, which drives River, names them, and through River's API where
// it has one.
const (
	RiverOwner  = "worker"
	riverPrefix = "river."
)

// MayName says whether package pkg (an import path below the module) may
// name table t in its own SQL: t is no table of the schema, or pkg owns it,
// or pkg is a package below its owner's (identity/registrysql, whose
// fragments package identity owns with its tables).
func MayName(pkg, t string) bool {
	o := OwnerOf(t)
	return o == "" || pkg == o || strings.HasPrefix(pkg, o+"/")
}

// OwnerOf returns the package that owns table t (a name as Named returns
// it), "" for a name that is no table of the schema (a common table
// expression, a system catalog).
func OwnerOf(t string) string {
	if strings.HasPrefix(t, riverPrefix) || strings.HasPrefix(t, "river_") {
		return RiverOwner
	}
	return Owner[t]
}

// Named returns the relation names sql reads or writes, each once, in order
// of appearance, lower-cased: the names after FROM (and after each comma of
// a FROM list), JOIN, INTO, UPDATE, TABLE and TRUNCATE. Function calls
// (FROM unnest(...)), subqueries and the insides of string literals and
// comments are not names. It does not parse SQL: on text that is not SQL it
// returns what such words are followed by, which callers filter through
// OwnerOf.
func Named(sql string) []string {
	toks := tokenize(sql)
	var out []string
	add := func(name string) {
		for _, n := range out {
			if n == name {
				return
			}
		}
		out = append(out, name)
	}
	for i := 0; i < len(toks); i++ {
		switch strings.ToUpper(toks[i]) {
		case "FROM":
			// A FROM list: items separated by commas, each a name (with
			// an alias) or something else, skipped to the next comma at
			// this depth.
			for j := i + 1; j < len(toks); {
				name, next := fromItem(toks, j, false)
				if name != "" {
					add(name)
				}
				j = skipToComma(toks, next)
				if j >= len(toks) || toks[j] != "," {
					break
				}
				j++
			}
		case "JOIN", "INTO", "UPDATE", "TABLE", "TRUNCATE":
			// INTO's name is followed by its columns, not a call's
			// arguments; DO UPDATE SET names nothing.
			if name, _ := fromItem(toks, i+1, strings.EqualFold(toks[i], "INTO")); name != "" && name != "set" {
				add(name)
			}
		}
	}
	return out
}

// fromItem returns the relation name at toks[j] (after ONLY or LATERAL),
// "" when the item there is no name (a function call unless columns, a
// subquery, the end), and the index after it.
func fromItem(toks []string, j int, columns bool) (string, int) {
	for j < len(toks) && (strings.EqualFold(toks[j], "ONLY") || strings.EqualFold(toks[j], "LATERAL")) {
		j++
	}
	if j >= len(toks) || !isName(toks[j]) {
		return "", j
	}
	if j+1 < len(toks) && toks[j+1] == "(" && !columns {
		return "", j + 1 // a function
	}
	return strings.ToLower(toks[j]), j + 1
}

// skipToComma returns the index of the next comma at the depth of toks[j],
// or of the token that ends the FROM list (a closing parenthesis, a
// semicolon, a keyword that starts the next clause), or len(toks). Joins
// and their conditions are part of the list (JOIN's own item is found by
// JOIN): a comma after ON's condition starts another item.
func skipToComma(toks []string, j int) int {
	depth := 0
	for ; j < len(toks); j++ {
		switch t := toks[j]; {
		case t == "(":
			depth++
		case t == ")":
			if depth == 0 {
				return j
			}
			depth--
		case depth > 0:
		case t == "," || t == ";":
			return j
		case endsFromList[strings.ToUpper(t)]:
			return j
		}
	}
	return j
}

// endsFromList are the keywords after which a FROM list's commas are no
// longer its own.
var endsFromList = map[string]bool{
	"WHERE": true, "GROUP": true, "HAVING": true, "WINDOW": true, "ORDER": true, "LIMIT": true, "OFFSET": true,
	"UNION": true, "INTERSECT": true, "EXCEPT": true, "RETURNING": true, "CONFLICT": true,
	"SET": true, "FOR": true, "FETCH": true, "VALUES": true, "SELECT": true,
}

func isName(t string) bool {
	r := rune(t[0])
	return r == '_' || unicode.IsLetter(r)
}

// tokenize splits sql into names (with their schema: river.river_job),
// numbers and single punctuation characters, dropping whitespace, string
// literals, quoted identifiers' quotes and comments.
func tokenize(sql string) []string {
	var toks []string
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == '\'':
			i++
			for i < len(sql) {
				if sql[i] == '\'' {
					if i+1 < len(sql) && sql[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
			toks = append(toks, "''")
		case c == '"':
			end := strings.IndexByte(sql[i+1:], '"')
			if end < 0 {
				return toks
			}
			toks = append(toks, sql[i+1:i+1+end])
			i += end + 2
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] == '.' || sql[j] == '$' ||
				sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			toks = append(toks, sql[i:j])
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			toks = append(toks, sql[i:i+1])
			i++
		}
	}
	return toks
}
