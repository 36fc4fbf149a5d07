package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
)

// writersLock serialises the registry's writers (a transaction-level
// advisory lock): a batch reads the identities its keys belong to, decides
// links and merges in Go and writes them, and no other writer may change
// those identities meanwhile. Paper ingest takes it after paper's own lock
// (ObservePapers); nothing that holds it takes paper's, so the order is
// fixed and there is no deadlock.
const writersLock int64 = 0x6964656e // "iden"

func lockWriters(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writersLock); err != nil {
		return fmt.Errorf("taking the registry writers' lock: %w", err)
	}
	return nil
}

// Registry reads and writes the identity registry. Every change that can
// alter what a feed shows (a new link, a merge, a split, a new name) bumps
// the feed versions of the followers of every key involved, in the same
// transaction.
type Registry struct {
	db       *database.DB
	follows  *follow.Service
	logger   *slog.Logger
	disputed []follow.FollowHook
}

// NewRegistry returns the registry over db; follows answers follower
// counts. It logs nothing until LogTo.
func NewRegistry(db *database.DB, follows *follow.Service) *Registry {
	return &Registry{db: db, follows: follows, logger: slog.New(slog.DiscardHandler)}
}

// OnNotThisPerson adds h, run in the transaction of each "not this person"
// NotThisPerson records (not one the user had already said) with the user
// and their follow; an error undoes the dispute. Package ranking counts it
// a change of what the user's model learns from (the person's papers are
// its examples, the disputed one no more).
func (r *Registry) OnNotThisPerson(h follow.FollowHook) { r.disputed = append(r.disputed, h) }

// LogTo makes the registry log, at WARN, what an operator should see: each
// record of a paper or of OpenAlex that would have merged two identities
// the host registered apart, which it refused (see Observe). Call it
// before the first write.
func (r *Registry) LogTo(logger *slog.Logger) { r.logger = logger }

// PutResult reports what a Put did, per record: created (none of its ids
// was known), updated (new ids, names or a merge), unchanged; and what of
// that a follower of a known identity sees change: ids joined to it
// (Links), its name replaced (Renames), identities joined (Merges).
type PutResult struct {
	Received  int     `json:"received"`
	Created   int     `json:"created"`
	Updated   int     `json:"updated"`
	Unchanged int     `json:"unchanged"`
	Merges    []Merge `json:"merges"`
	// Links lists the records that joined new ids to an identity that
	// existed before the batch (its papers now reach that identity's
	// followers); Renames those that replaced an identity's name (every
	// follower sees the new one). Both are [] when none.
	Links   []Link   `json:"links"`
	Renames []Rename `json:"renames"`

	// refused are the records a source other than the host sent that
	// would have merged identities the host registered apart.
	refused []refusal
}

// Merge says that record Index joined identities that were separate: the
// ones whose canonical ids were Merged are now one, canonical id Into.
type Merge struct {
	Index  int      `json:"index"`
	Into   string   `json:"into"`
	Merged []string `json:"merged"`
}

// Link says that record Index joined IDs, ids the registry did not know,
// to the identity that existed before the batch and is now known by the
// canonical id To (with them).
type Link struct {
	Index int      `json:"index"`
	To    string   `json:"to"`
	IDs   []string `json:"ids"`
}

// Rename says that record Index renamed the identity known by the
// canonical id ID from From to To.
type Rename struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// refusal is a record that would have merged the host-registered
// identities whose canonical ids are between.
type refusal struct {
	ids     []string
	between []string
}

// logRefused logs each refused merge of res.
func (r *Registry) logRefused(ctx context.Context, src Source, res *PutResult) {
	for _, f := range res.refused {
		r.logger.WarnContext(ctx, "identity: refused to merge identities the host registered apart; only the host merges them (PUT) if they are one",
			"source", string(src), "ids", strings.Join(f.ids, ","), "identities", strings.Join(f.between, ","))
	}
}

// Put stores records from the host (SourceHost) in one transaction:
// idempotent (the same batch twice changes nothing the second time); a
// record whose ids belong to two identities merges them (reported in
// Merges), one that joins new ids to a known identity says so (Links);
// the host's name replaces any other source's (reported in Renames), its
// other names are added. Every id of the records is then host-registered
// (papers and OpenAlex never merge two identities that hold such ids) and
// keeps the record's names as the ones a split gives it back. Records must
// come from DecodeRecords (valid, no id in two records); more than
// MaxBatch is an apperr.TooLarge.
func (r *Registry) Put(ctx context.Context, records []Record) (*PutResult, error) {
	if len(records) > MaxBatch {
		return nil, apperr.New(apperr.TooLarge, "at most %d records per request; got %d", MaxBatch, len(records))
	}
	res := &PutResult{Received: len(records), Merges: []Merge{}, Links: []Link{}, Renames: []Rename{}}
	err := r.db.InTx(ctx, func(tx pgx.Tx) error {
		return apply(ctx, tx, records, SourceHost, res)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Observe stores records from a source other than the host (OpenAlex
// enrichment) in its own transaction, as Put does except that ids a split
// separated are never linked again, names only fill in or replace a
// lower-ranked source's, and a record never merges two identities that
// each hold an id the host registered (or a name it gave): it may link ids
// to one of them, but the host decides whether two people it registered
// apart are one. Such a record changes nothing and is logged (LogTo).
//
// Upstream data is checked, not trusted: ids that do not parse (a ROR id
// with a bad checksum, say) are dropped, a record left without ids is
// skipped, names are cleaned and a name over MaxName or a bad country
// is left out.
func (r *Registry) Observe(ctx context.Context, src Source, records []Record) error {
	var clean []Record
	for _, rec := range records {
		c := Record{Kind: rec.Kind}
		for _, s := range rec.IDs {
			if id, err := parseID(rec.Kind, s); err == nil && !slices.Contains(c.IDs, id) && len(c.IDs) < MaxIDs {
				c.IDs = append(c.IDs, id)
			}
		}
		if len(c.IDs) == 0 {
			continue
		}
		if n, ok := cleanName(rec.Name); ok {
			c.Name = n
		}
		if cc, ok := cleanCountry(rec.Country); ok && rec.Kind == follow.Institution {
			c.Country = cc
		}
		clean = append(clean, c)
	}
	if len(clean) == 0 {
		return nil
	}
	res := &PutResult{}
	if err := r.db.InTx(ctx, func(tx pgx.Tx) error {
		return apply(ctx, tx, clean, src, res)
	}); err != nil {
		return err
	}
	r.logRefused(ctx, src, res)
	return nil
}

// ObservePapers implements catalog.IdentityObserver: inside the ingest
// transaction, the researcher ids listed on one author of a stored paper
// are linked as one person (OpenAlex enrichment puts an author's OpenAlex
// id and ORCID there; a pushed paper the host's ids), named after the
// author when the person has no name yet. As with Observe, an author
// never merges two identities the host registered apart (logged when
// found, inside the ingest transaction).
func (r *Registry) ObservePapers(ctx context.Context, tx pgx.Tx, papers []paper.Paper) error {
	var recs []Record
	for i := range papers {
		for _, a := range papers[i].Authors {
			if len(a.IDs) == 0 {
				continue
			}
			name, _ := cleanName(a.Name)
			if len([]rune(name)) > MaxName {
				name = ""
			}
			recs = append(recs, Record{Kind: follow.Researcher, IDs: a.IDs, Name: name})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	res := &PutResult{}
	if err := apply(ctx, tx, recs, SourcePaper, res); err != nil {
		return err
	}
	r.logRefused(ctx, SourcePaper, res)
	return nil
}

// group is one identity as apply builds it: the stored identities it
// joins (ids, the smallest survives) and every key.
type group struct {
	kind       follow.Kind
	ids        []int64
	keys       []string
	newKeys    []string
	name       string
	nameSource Source
	others     []string
	country    string
	changed    bool
	merged     bool // joins two or more stored identities
	// host: the group holds an id the host registered (identity_keys
	// source host) or the host named it.
	host bool
}

type stored struct {
	id         int64
	kind       follow.Kind
	name       string
	nameSource Source
	others     []string
	country    string
	keys       []string
	host       bool
	// hostNames holds the keys the host registered (source host), each
	// with its host_name ("" for none): registerHostKeys leaves a key
	// alone that a record would not change.
	hostNames map[string]string
}

// apply is the registry's one write path: it links the records' ids into
// identities as described at Put, writes the changes set-wise and bumps
// the followers of every changed identity. The caller owns tx.
func apply(ctx context.Context, tx pgx.Tx, records []Record, src Source, res *PutResult) error {
	if err := lockWriters(ctx, tx); err != nil {
		return err
	}
	var all []string
	for _, rec := range records {
		all = append(all, rec.keys()...)
	}
	ids, err := ownersOf(ctx, tx, all)
	if err != nil {
		return err
	}
	known, err := loadIdentities(ctx, tx, ids)
	if err != nil {
		return err
	}
	var barriers map[[2]string]bool
	if src != SourceHost {
		var keys []string
		keys = append(keys, all...)
		for _, s := range known {
			keys = append(keys, s.keys...)
		}
		if barriers, err = loadBarriers(ctx, tx, keys); err != nil {
			return err
		}
	}

	groupOf := map[string]*group{}
	for _, s := range known {
		g := &group{kind: s.kind, ids: []int64{s.id}, keys: slices.Clone(s.keys), name: s.name, nameSource: s.nameSource,
			others: s.others, country: s.country, host: s.host}
		for _, k := range s.keys {
			groupOf[k] = g
		}
	}
	var touched []*group
	for i, rec := range records {
		keys := rec.keys()
		var gs []*group
		for _, k := range keys {
			if g := groupOf[k]; g != nil && !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
		if src != SourceHost && crossesBarrier(keys, gs, barriers) {
			res.Unchanged++
			continue
		}
		if src != SourceHost {
			if between := hostRegistered(gs); len(between) > 1 {
				res.refused = append(res.refused, refusal{ids: rec.IDs, between: between})
				res.Unchanged++
				continue
			}
		}
		var g *group
		created := len(gs) == 0
		if created {
			g = &group{kind: rec.Kind, changed: true}
		} else {
			g = gs[0]
		}
		before, oldName, existed := g.snapshot(), g.name, len(g.ids) > 0
		var merged []string
		if len(gs) > 1 {
			merged = append(merged, canonicalOf(g.kind, g.keys))
			for _, o := range gs[1:] {
				merged = append(merged, canonicalOf(o.kind, o.keys))
				g.absorb(o)
				for _, k := range o.keys {
					groupOf[k] = g
				}
			}
		}
		var linked []string
		for j, k := range keys {
			if groupOf[k] == nil {
				groupOf[k] = g
				g.keys = append(g.keys, k)
				g.newKeys = append(g.newKeys, k)
				linked = append(linked, rec.IDs[j])
			}
		}
		g.rename(rec, src)
		if src == SourceHost {
			g.host = true
			if existed && len(linked) > 0 {
				res.Links = append(res.Links, Link{Index: i, To: canonicalOf(g.kind, g.keys), IDs: linked})
			}
			if oldName != "" && g.name != oldName {
				res.Renames = append(res.Renames, Rename{Index: i, ID: canonicalOf(g.kind, g.keys), From: oldName, To: g.name})
			}
		}
		if !slices.Contains(touched, g) {
			touched = append(touched, g)
		}
		changed := created || g.snapshot() != before
		g.changed = g.changed || changed
		switch {
		case created:
			res.Created++
		case changed:
			res.Updated++
		default:
			res.Unchanged++
		}
		if len(merged) > 0 && len(g.ids) > 1 {
			res.Merges = append(res.Merges, Merge{Index: i, Into: canonicalOf(g.kind, g.keys), Merged: merged})
		}
	}
	// Groups absorbed into another are no longer their keys' group.
	var live []*group
	for _, g := range touched {
		if g.changed && len(g.keys) > 0 && groupOf[g.keys[0]] == g {
			live = append(live, g)
		}
	}
	var names map[string]hostRecordNames
	if src == SourceHost {
		if names, err = hostNamesOf(records); err != nil {
			return err
		}
	}
	if len(live) > 0 {
		if err := write(ctx, tx, live, src, names); err != nil {
			return err
		}
	}
	if src == SourceHost {
		if err := registerHostKeys(ctx, tx, records, names, live, known); err != nil {
			return err
		}
	}
	if len(live) == 0 {
		return nil
	}
	if src == SourcePaper {
		// Every key a paper links is a key row of the same ingest (a new
		// paper's keys, or a known paper's new author ids), so the match job
		// enqueued in this transaction expands it to the whole identity and
		// bumps every follower of it: a second bump here would only cost.
		return nil
	}
	var bump []string
	for _, g := range live {
		bump = append(bump, g.keys...)
	}
	return bumpFollowers(ctx, tx, bump)
}

// hostRegistered returns the canonical ids of the groups of gs that hold
// a host-registered id.
func hostRegistered(gs []*group) []string {
	var out []string
	for _, g := range gs {
		if g.host {
			out = append(out, canonicalOf(g.kind, g.keys))
		}
	}
	return out
}

// hostRecordNames are the names a host record gives each of its ids: its
// name and its other names (a JSON array, as a text[] parameter's
// element carries a list).
type hostRecordNames struct{ name, others string }

// hostNamesOf returns the names each key of records is given (records
// hold no id twice: DecodeRecords).
func hostNamesOf(records []Record) (map[string]hostRecordNames, error) {
	out := map[string]hostRecordNames{}
	for _, rec := range records {
		o, err := jsonStrings(rec.OtherNames)
		if err != nil {
			return nil, err
		}
		for _, k := range rec.keys() {
			out[k] = hostRecordNames{name: rec.Name, others: o}
		}
	}
	return out, nil
}

// mergedOtherNames is, in registerHostKeys' statement, the key's other
// names with the record's (t.others, a JSON array) added: sorted and
// distinct, as host_other_names is always kept.
const mergedOtherNames = `ARRAY(SELECT DISTINCT o FROM unnest(k.host_other_names || ARRAY(SELECT jsonb_array_elements_text(t.others::jsonb))) o ORDER BY o)`

// registerHostKeys marks every key of the host's records as the host's
// (source host: the identity is host-registered, whoever linked the key
// first) and remembers the record's names with it, which a split gives
// back: host_name is the record's name (a record without one keeps the
// key's), host_other_names gains its other names. The keys write linked
// now (the groups' newKeys) were inserted so already, and the keys known
// (the identities apply loaded) as the host's with the record's name are
// so already unless the record has other names: both are left out, so a
// host sending again the records it sent before writes nothing here.
// Primary-key probes for the rest; a key already so is not written.
func registerHostKeys(ctx context.Context, tx pgx.Tx, records []Record, names map[string]hostRecordNames, written []*group, known []*stored) error {
	keys, ns, others := hostKeysToMark(records, names, written, known)
	if len(keys) == 0 {
		return nil
	}
	// One primary-key probe per key: SET and WHERE read the row's own
	// values. host_other_names is kept sorted and distinct, so a record
	// without other names leaves it as it is (no array built: most
	// records have none).
	if _, err := tx.Exec(ctx, `
		UPDATE identity_keys k SET source = 'host', host_name = coalesce(nullif(t.name, ''), k.host_name),
			host_other_names = CASE WHEN t.others = '[]' THEN k.host_other_names ELSE `+mergedOtherNames+` END
		FROM unnest($1::text[], $2::text[], $3::text[]) AS t(key, name, others)
		WHERE k.key = t.key
		  AND (k.source <> 'host' OR nullif(t.name, '') IS DISTINCT FROM k.host_name AND t.name <> ''
		       OR t.others <> '[]' AND k.host_other_names <> `+mergedOtherNames+`)`,
		keys, ns, others); err != nil {
		return fmt.Errorf("registering %d ids as the host's: %w", len(keys), err)
	}
	return nil
}

// hostKeysToMark returns the keys of records registerHostKeys must
// probe, each with its record's name and other names (names): every key
// but those written inserted (newKeys) and those known (the identities
// loaded) as the host's with the record's name when the record has no
// other names.
func hostKeysToMark(records []Record, names map[string]hostRecordNames, written []*group, known []*stored) (keys, ns, others []string) {
	inserted := map[string]bool{}
	for _, g := range written {
		for _, k := range g.newKeys {
			inserted[k] = true
		}
	}
	hostName := map[string]string{}
	for _, s := range known {
		for k, n := range s.hostNames {
			hostName[k] = n
		}
	}
	for _, rec := range records {
		for _, k := range rec.keys() {
			n := names[k]
			hn, host := hostName[k]
			if inserted[k] || host && (n.name == "" || n.name == hn) && n.others == "[]" {
				continue
			}
			keys, ns, others = append(keys, k), append(ns, n.name), append(others, n.others)
		}
	}
	return keys, ns, others
}

// snapshot is what makes a group differ for the result counts.
func (g *group) snapshot() string {
	return fmt.Sprint(len(g.ids), len(g.keys), g.name, g.nameSource, len(g.others), g.country)
}

// absorb merges o into g: stored ids, keys, the better name, other names.
func (g *group) absorb(o *group) {
	g.ids = append(g.ids, o.ids...)
	slices.Sort(g.ids)
	g.keys = append(g.keys, o.keys...)
	g.newKeys = append(g.newKeys, o.newKeys...)
	g.merged = g.merged || len(o.ids) > 0
	if o.name != "" && (g.name == "" || o.nameSource.rank() > g.nameSource.rank()) {
		old := g.name
		g.name, g.nameSource = o.name, o.nameSource
		g.addOther(old)
	} else {
		g.addOther(o.name)
	}
	for _, n := range o.others {
		g.addOther(n)
	}
	if g.country == "" {
		g.country = o.country
	}
	g.addOther("")
	g.host = g.host || o.host
	g.changed = true
	o.changed = false
}

// rename applies a record's names: a host name replaces the name (the old
// one becomes an other name), another source's only fills in or replaces
// a lower-ranked source's.
func (g *group) rename(rec Record, src Source) {
	if rec.Name != "" && rec.Name != g.name &&
		(g.name == "" || src == SourceHost || src.rank() > g.nameSource.rank()) {
		old := g.name
		g.name, g.nameSource = rec.Name, src
		g.addOther(old)
	} else if rec.Name != "" && src != SourcePaper {
		g.addOther(rec.Name)
	}
	for _, n := range rec.OtherNames {
		g.addOther(n)
	}
	if rec.Country != "" && (g.country == "" || src == SourceHost) {
		g.country = rec.Country
	}
	g.addOther("")
}

// addOther adds n to the other names (n "" adds nothing) and keeps the
// name itself out of them.
func (g *group) addOther(n string) {
	if n != "" && n != g.name && !slices.Contains(g.others, n) && len(g.others) < MaxOtherNames {
		g.others = append(g.others, n)
	}
	if i := slices.Index(g.others, g.name); i >= 0 {
		g.others = slices.Delete(g.others, i, i+1)
	}
}

// crossesBarrier reports whether linking keys with the groups gs would put
// two keys a split separated into one identity.
func crossesBarrier(keys []string, gs []*group, barriers map[[2]string]bool) bool {
	if len(barriers) == 0 {
		return false
	}
	all := slices.Clone(keys)
	for _, g := range gs {
		all = append(all, g.keys...)
	}
	for _, a := range all {
		for _, b := range all {
			if barriers[[2]string{a, b}] {
				return true
			}
		}
	}
	return false
}

// ownersOf returns the identities that hold any of keys (primary-key
// probes on identity_keys).
func ownersOf(ctx context.Context, tx pgx.Tx, keys []string) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT identity_id FROM identity_keys WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("finding identities of %d keys: %w", len(keys), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("finding identities of %d keys: %w", len(keys), err)
	}
	return ids, nil
}

// loadIdentities reads identities with all their keys, and which keys
// the host registered with what name. One range of
// identity_keys_identity_idx per identity, reading the keys' rows (their
// source and host name).
func loadIdentities(ctx context.Context, tx pgx.Tx, ids []int64) ([]*stored, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT i.id, i.kind, coalesce(i.name, ''), coalesce(i.name_source, ''), i.other_names, coalesce(i.country, ''),
		       k.keys, k.host_keys, k.host_names,
		       i.name_source IS NOT DISTINCT FROM 'host' OR cardinality(k.host_keys) > 0
		FROM identities i, LATERAL (
			SELECT coalesce(array_agg(k.key ORDER BY k.key), '{}') AS keys,
			       coalesce(array_agg(k.key ORDER BY k.key) FILTER (WHERE k.source = 'host'), '{}') AS host_keys,
			       coalesce(array_agg(coalesce(k.host_name, '') ORDER BY k.key) FILTER (WHERE k.source = 'host'), '{}') AS host_names
			FROM identity_keys k WHERE k.identity_id = i.id) k
		WHERE i.id = ANY($1) ORDER BY i.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("loading %d identities: %w", len(ids), err)
	}
	defer rows.Close()
	var out []*stored
	for rows.Next() {
		s := &stored{}
		var kind, src string
		var hostKeys, hostNames []string
		if err := rows.Scan(&s.id, &kind, &s.name, &src, &s.others, &s.country, &s.keys, &hostKeys, &hostNames, &s.host); err != nil {
			return nil, fmt.Errorf("loading identities: %w", err)
		}
		s.kind, s.nameSource = follow.Kind(kind), Source(src)
		if len(hostKeys) > 0 {
			s.hostNames = make(map[string]string, len(hostKeys))
			for j, k := range hostKeys {
				s.hostNames[k] = hostNames[j]
			}
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func loadBarriers(ctx context.Context, tx pgx.Tx, keys []string) (map[[2]string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT key, other_key FROM identity_splits WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("loading splits: %w", err)
	}
	out := map[[2]string]bool{}
	var a, b string
	_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error {
		out[[2]string{a, b}] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading splits: %w", err)
	}
	return out, nil
}

// write stores the changed groups: new identities (ids taken with
// nextval), the survivors' names, the keys of merged identities moved to
// the survivor, the losers deleted, new keys inserted. A host write also
// drops the split records between keys it now links.
func write(ctx context.Context, tx pgx.Tx, groups []*group, src Source, names map[string]hostRecordNames) error {
	var fresh int
	for _, g := range groups {
		if len(g.ids) == 0 {
			fresh++
		}
	}
	var newIDs []int64
	if fresh > 0 {
		rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence('identities', 'id')) FROM generate_series(1, $1)`, fresh)
		if err != nil {
			return fmt.Errorf("allocating %d identities: %w", fresh, err)
		}
		if newIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return fmt.Errorf("allocating %d identities: %w", fresh, err)
		}
	}
	var (
		idCol, loserCol, survivorCol []int64
		kindCol, nameCol, srcCol     []string
		countryCol, othersCol        []string
		isNew                        []bool
		keyCol, keySrc               []string
		keyName, keyOthers           []string
		keyOwner                     []int64
		linkKeys                     []string
	)
	for _, g := range groups {
		var id int64
		if len(g.ids) == 0 {
			id, newIDs = newIDs[0], newIDs[1:]
		} else {
			id = g.ids[0]
			for _, l := range g.ids[1:] {
				loserCol = append(loserCol, l)
				survivorCol = append(survivorCol, id)
			}
		}
		others, _ := jsonStrings(g.others)
		idCol, kindCol, nameCol, srcCol = append(idCol, id), append(kindCol, string(g.kind)), append(nameCol, g.name), append(srcCol, string(g.nameSource))
		countryCol, othersCol, isNew = append(countryCol, g.country), append(othersCol, others), append(isNew, len(g.ids) == 0)
		for _, k := range g.newKeys {
			keyCol, keyOwner, keySrc = append(keyCol, k), append(keyOwner, id), append(keySrc, string(src))
			hn := names[k] // the host's records' names (none from other sources)
			if hn.others == "" {
				hn.others = "[]"
			}
			keyName, keyOthers = append(keyName, hn.name), append(keyOthers, hn.others)
		}
		if src == SourceHost && len(g.keys) > 1 {
			linkKeys = append(linkKeys, g.keys...)
		}
	}
	// Insert new identities and update survivors in one statement each.
	if _, err := tx.Exec(ctx, `
		INSERT INTO identities (id, kind, name, name_source, other_names, country)
		SELECT id, kind, nullif(name, ''), nullif(src, ''), ARRAY(SELECT jsonb_array_elements_text(others::jsonb)), nullif(country, '')
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[])
		     AS t(id, kind, name, src, others, country, fresh)
		WHERE fresh`,
		idCol, kindCol, nameCol, srcCol, othersCol, countryCol, isNew); err != nil {
		return fmt.Errorf("creating identities: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE identities i SET name = nullif(t.name, ''), name_source = nullif(t.src, ''),
			other_names = ARRAY(SELECT jsonb_array_elements_text(t.others::jsonb)), country = nullif(t.country, ''), updated_at = now()
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[]) AS t(id, name, src, others, country, fresh)
		WHERE i.id = t.id AND NOT t.fresh`,
		idCol, nameCol, srcCol, othersCol, countryCol, isNew); err != nil {
		return fmt.Errorf("updating identities: %w", err)
	}
	if len(loserCol) > 0 {
		// Merges: the losers' keys move to the survivor (identity_keys_identity_idx).
		if _, err := tx.Exec(ctx, `
			UPDATE identity_keys k SET identity_id = t.survivor
			FROM unnest($1::bigint[], $2::bigint[]) AS t(loser, survivor) WHERE k.identity_id = t.loser`,
			loserCol, survivorCol); err != nil {
			return fmt.Errorf("merging %d identities: %w", len(loserCol), err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM identities WHERE id = ANY($1)`, loserCol); err != nil {
			return fmt.Errorf("deleting %d merged identities: %w", len(loserCol), err)
		}
	}
	if len(keyCol) > 0 {
		// A host's key is inserted with its record's names, as
		// registerHostKeys would set them (other names sorted and
		// distinct).
		if _, err := tx.Exec(ctx, `
			INSERT INTO identity_keys (key, identity_id, source, host_name, host_other_names)
			SELECT t.key, t.owner, t.src, nullif(t.name, ''),
			       CASE WHEN t.others = '[]' THEN '{}'
			            ELSE ARRAY(SELECT DISTINCT o FROM jsonb_array_elements_text(t.others::jsonb) o ORDER BY o) END
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(key, owner, src, name, others)`,
			keyCol, keyOwner, keySrc, keyName, keyOthers); err != nil {
			return fmt.Errorf("linking %d ids: %w", len(keyCol), err)
		}
	}
	if len(linkKeys) > 0 {
		if _, err := tx.Exec(ctx, `
			DELETE FROM identity_splits s USING identity_keys a, identity_keys b
			WHERE s.key = ANY($1) AND a.key = s.key AND b.key = s.other_key AND a.identity_id = b.identity_id`, linkKeys); err != nil {
			return fmt.Errorf("clearing splits the host linked again: %w", err)
		}
	}
	return nil
}

// bumpFollowers bumps the feed version of every user who follows one of
// keys (follows_key_idx).
func bumpFollowers(ctx context.Context, tx pgx.Tx, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	users, err := follow.FollowersOf(ctx, tx, keys)
	if err != nil {
		return err
	}
	slices.Sort(users)
	return account.BumpFeeds(ctx, tx, users...)
}

// schemeOrder ranks id schemes for the canonical id: the person's own
// ORCID iD first, then OpenAlex, dblp, Semantic Scholar, the host's; an
// institution's ROR id, then OpenAlex.
var schemeOrder = []string{"orcid:", "ror:", "openalex:", "dblp:", "s2:", "host:"}

// canonicalOf is the canonical id among keys: the best-ranked scheme, then
// the smallest id.
func canonicalOf(kind follow.Kind, keys []string) string {
	best, bestRank := "", len(schemeOrder)+1
	prefix := string(kind) + ":"
	for _, k := range keys {
		id := strings.TrimPrefix(k, prefix)
		rank := len(schemeOrder)
		for i, s := range schemeOrder {
			if strings.HasPrefix(id, s) {
				rank = i
				break
			}
		}
		if rank < bestRank || rank == bestRank && id < best {
			best, bestRank = id, rank
		}
	}
	return best
}

// jsonStrings encodes ss as a JSON array (how a list of names travels in
// one element of a text[] parameter).
func jsonStrings(ss []string) (string, error) {
	if ss == nil {
		ss = []string{}
	}
	b, err := json.Marshal(ss)
	return string(b), err
}

// UnresolvedAuthors returns up to limit OpenAlex author ids that users
// follow and the registry does not know (no paper carried them, OpenAlex
// was not asked yet): enrichment asks OpenAlex about them, which answers a
// merged profile under its survivor. follows_key_idx serves the range.
func (r *Registry) UnresolvedAuthors(ctx context.Context, limit int) ([]string, error) {
	rows, err := r.db.Pool.Query(ctx, `
		SELECT DISTINCT f.target FROM `+follow.FollowsTable+` f
		WHERE f.key >= 'researcher:openalex:A' AND f.key < 'researcher:openalex:B' AND f.key LIKE 'researcher:openalex:A%'
		  AND NOT EXISTS (SELECT 1 FROM identity_keys k WHERE k.key = f.key)
		LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing unresolved OpenAlex authors: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing unresolved OpenAlex authors: %w", err)
	}
	return ids, nil
}
