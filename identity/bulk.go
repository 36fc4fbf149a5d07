package identity

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// bulkBatch is how many records BulkLoad writes per COPY.
const bulkBatch = 50_000

// BulkLoad writes records as new identities, each with the keys of its ids
// and its name, from src, with COPY, in tx: for generating datasets (the
// benchmark's), not for what a source says. It holds the registry
// writers' lock until tx ends, like Put. Ids are taken from the
// identities sequence in the order of records (ascending in it: see
// database.NextIDs); it returns how many identities it wrote. Records
// must be valid (DecodeRecords' checks: normalised ids of Kind, no id in
// two records); an id already linked fails the load on identity_keys'
// primary key. It skips what Put does beyond the rows: no merge with
// stored identities, no split records cleared, no feed bumps (a follower
// of a key it links gets no new ETag for it: load before the follows, or
// bump with account.BumpFeeds).
func BulkLoad(ctx context.Context, tx pgx.Tx, records iter.Seq[Record], src Source) (int, error) {
	if src.rank() == 0 {
		return 0, fmt.Errorf("loading identities: unknown source %q", src)
	}
	if err := lockWriters(ctx, tx); err != nil {
		return 0, err
	}
	n := 0
	err := database.Batches(records, bulkBatch, func(batch []Record) error {
		ids, err := database.NextIDs(ctx, tx, "identities", "id", len(batch))
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"identities"}, []string{"id", "kind", "name", "name_source", "other_names", "country"},
			pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
				r := &batch[i]
				var name, nameSrc, country any
				if r.Name != "" {
					name, nameSrc = r.Name, string(src)
				}
				if r.Country != "" {
					country = r.Country
				}
				others := r.OtherNames
				if others == nil {
					others = []string{}
				}
				return []any{ids[i], string(r.Kind), name, nameSrc, others, country}, nil
			})); err != nil {
			return fmt.Errorf("loading %d identities: %w", len(batch), err)
		}
		var keys [][]any
		for i := range batch {
			for _, k := range batch[i].keys() {
				keys = append(keys, []any{k, ids[i], string(src)})
			}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"identity_keys"}, []string{"key", "identity_id", "source"}, pgx.CopyFromRows(keys)); err != nil {
			return fmt.Errorf("loading the ids of %d identities: %w", len(batch), err)
		}
		n += len(batch)
		return nil
	})
	return n, err
}

// RemoveKeys takes keys off the identities they belong to, in tx, as if
// they had never been linked: for taking generated links off a dataset
// again, so that Put can make them anew (the benchmark's late links). It
// holds the registry writers' lock until tx ends. It records no split
// (papers and OpenAlex may link them again), leaves the
// identities themselves (with their other keys and names) and bumps no
// feed. It returns how many keys it removed; unknown keys are ignored.
func RemoveKeys(ctx context.Context, tx pgx.Tx, keys []string) (int, error) {
	if err := lockWriters(ctx, tx); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM identity_keys WHERE key = ANY($1)`, keys)
	if err != nil {
		return 0, fmt.Errorf("removing %d identity keys: %w", len(keys), err)
	}
	return int(tag.RowsAffected()), nil
}
