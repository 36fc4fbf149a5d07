package match

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/internal/gencache"
	"followfeed/paper"
)

// The details of the papers digests show (LoadPapers without abstracts)
// are kept by the process under the paper's id and row version
// (catalog.QueueVersions), as the mutes' views are: a daily run's batches
// show the same day's papers, and each batch read them all again (2.2 ms
// of PostgreSQL per batch of 50 digests in pg_stat_statements at scale
// M, the largest statement of a digest after the selection's two). A kept
// paper is used only while its row is the version it was read at, so a
// new version, a correction or an enrichment is read again; a paper no
// longer stored is not returned.

// maxKeptDetails bounds the papers kept: two generations of this many,
// some 1.5 KiB each without their abstracts.
const maxKeptDetails = 8192

// keptDetail is a paper as read at a row version.
type keptDetail struct {
	version uint32
	p       paper.Paper
}

// keptDetails are the process's papers read without abstracts, per
// database.
var keptDetails = newPerDatabase(func() *gencache.Cache[int64, keptDetail] {
	return gencache.New[int64, keptDetail](maxKeptDetails)
})

// loadKeptDetails fills in the paper.Paper of each byID[id] for ids, in
// tx, without abstracts: the ids' row versions are read (one statement),
// the papers kept at those versions are taken as they are, and only the
// others are read (one more statement) and kept. The papers' slices are
// shared with the cache and with other callers: read-only.
func loadKeptDetails(ctx context.Context, tx pgx.Tx, ids []int64, byID map[int64]*Paper) error {
	var versions map[int64]uint32
	b := &pgx.Batch{}
	catalog.QueueVersions(b, ids, func(v map[int64]uint32) { versions = v })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("reading the versions of %d papers: %w", len(ids), err)
	}
	kept := keptDetails.get(tx)
	var load []int64
	for _, id := range ids {
		ver, ok := versions[id]
		if !ok {
			continue // not stored any more
		}
		if d, ok := kept.Get(id); ok && d.version == ver {
			byID[id].Paper = d.p
		} else {
			load = append(load, id)
		}
	}
	if len(load) == 0 {
		return nil
	}
	got, err := catalog.Load(ctx, tx, load, catalog.WithoutAbstract)
	if err != nil {
		return err
	}
	for id, p := range got {
		byID[id].Paper = p
		// Kept under the version read before: had the row changed since,
		// its version differs now, and the next look reads it again.
		kept.Put(id, keptDetail{version: versions[id], p: p})
	}
	return nil
}
