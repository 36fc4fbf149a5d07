package identity_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/identity"
	"followfeed/internal/testdb"
)

// bulkRecords are host records as DecodeRecords gives them: a researcher
// with three ids, one with a name only and another name, an institution
// with a country.
func bulkRecords() []identity.Record {
	return []identity.Record{
		{Kind: follow.Researcher, IDs: []string{"s2:1", "host:1", "openalex:A1"}, Name: "Researcher 1"},
		{Kind: follow.Researcher, IDs: []string{"s2:2"}, Name: "Ada Lovelace", OtherNames: []string{"A. Lovelace"}},
		{Kind: follow.Institution, IDs: []string{"ror:03dbr7087"}, Name: "University of Toronto", Country: "CA"},
	}
}

func (e *env) bulkLoad(recs []identity.Record, src identity.Source) (int, error) {
	var n int
	err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		n, err = identity.BulkLoad(e.ctx, tx, slices.Values(recs), src)
		return err
	})
	return n, err
}

// What BulkLoad writes reads back as what Put writes for the same records
// (the identity under each of its ids, its name and its source), and an
// id linked already fails the load.
func TestBulkLoadWritesWhatPutWrites(t *testing.T) {
	t.Parallel()
	bulk, put := setup(t), setup(t)
	recs := bulkRecords()
	if n, err := bulk.bulkLoad(recs, identity.SourceHost); err != nil || n != len(recs) {
		t.Fatalf("loaded %d of %d: %v", n, len(recs), err)
	}
	if _, err := put.reg.Put(put.ctx, recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, id := range r.IDs {
			got, err := bulk.reg.Lookup(bulk.ctx, r.Kind, id, 0)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			want, err := put.reg.Lookup(put.ctx, r.Kind, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: bulk %+v, Put %+v", id, got, want)
			}
		}
	}
	sources := func(e *env) []string {
		return testdb.Strings(t, e.db, `
			SELECT k.key || ' ' || k.source || ' ' || coalesce(i.name_source, '-') FROM identity_keys k JOIN identities i ON i.id = k.identity_id ORDER BY 1`)
	}
	if got, want := sources(bulk), sources(put); !slices.Equal(got, want) {
		t.Errorf("sources: bulk %v, Put %v", got, want)
	}
	if _, err := bulk.bulkLoad([]identity.Record{{Kind: follow.Researcher, IDs: []string{"s2:9", "s2:2"}}}, identity.SourceHost); err == nil {
		t.Error("an id linked already was loaded again")
	}
	if _, err := bulk.bulkLoad(recs[:1], "guess"); err == nil {
		t.Error("a load from no known source succeeded")
	}
}

// RemoveKeys unlinks keys as if never linked: the identity keeps its other
// ids and name, no split is recorded, and Put links the id again as a new
// id of the same identity (no merge).
func TestRemoveKeysUnlinks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.bulkLoad(bulkRecords(), identity.SourceHost); err != nil {
		t.Fatal(err)
	}
	host := follow.Target{Kind: follow.Researcher, ID: "host:1"}
	var n int
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		n, err = identity.RemoveKeys(e.ctx, tx, []string{host.Key(), "researcher:s2:404"})
		return err
	}); err != nil || n != 1 {
		t.Fatalf("removed %d: %v", n, err)
	}
	if _, err := e.reg.Lookup(e.ctx, follow.Researcher, "host:1", 0); err == nil {
		t.Error("the removed id is still known")
	}
	left, err := e.reg.Lookup(e.ctx, follow.Researcher, "s2:1", 0)
	if err != nil || left.Name != "Researcher 1" || !slices.Equal(left.IDs, []string{"openalex:A1", "s2:1"}) {
		t.Errorf("what is left: %+v, %v", left, err)
	}
	var splits int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM identity_splits`).Scan(&splits); err != nil || splits != 0 {
		t.Errorf("%d splits (%v)", splits, err)
	}
	res, err := e.reg.Put(e.ctx, []identity.Record{{Kind: follow.Researcher, IDs: []string{"s2:1", "host:1"}, Name: "Researcher 1"}})
	if err != nil || res.Updated != 1 || len(res.Merges) != 0 {
		t.Errorf("linking again: %+v, %v", res, err)
	}
}
