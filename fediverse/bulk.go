package fediverse

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// BulkFollower is one remote follower for BulkLoad: Follower (an actor id
// on another server) follows the actor of key ActorKey and is delivered to
// at the shared inbox Inbox, an index into BulkLoad's inboxes.
type BulkFollower struct {
	ActorKey string
	Follower string
	Inbox    int
}

// BulkLoad writes actors, inboxes and followers in tx, for generating
// datasets (the benchmark's fan-out), not for the fediverse: actorKeys
// become actors whose fan-out window starts after watermark; inboxes are
// shared inbox URLs (each its own host); followers follow them. It returns
// the inboxes' ids, in the order given. It skips what a Follow does beyond
// the rows: no Accept is sent, no key is fetched, no metric moves. An actor,
// inbox or follower stored already fails the load on its unique index.
func BulkLoad(ctx context.Context, tx pgx.Tx, actorKeys []string, watermark int64, inboxes []string, followers []BulkFollower) ([]int64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO ap_actors (key, watermark) SELECT k, $2 FROM unnest($1::text[]) k`, actorKeys, watermark); err != nil {
		return nil, fmt.Errorf("loading %d actors: %w", len(actorKeys), err)
	}
	hosts := make([]string, len(inboxes))
	for i, u := range inboxes {
		if hosts[i] = hostOf(u); hosts[i] == "" {
			return nil, fmt.Errorf("inbox %q has no host", u)
		}
	}
	// unnest ... WITH ORDINALITY keeps RETURNING in the order given.
	rows, err := tx.Query(ctx, `
		INSERT INTO ap_inboxes (url, host)
		SELECT u, h FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(u, h, n) ORDER BY n
		RETURNING id`, inboxes, hosts)
	if err != nil {
		return nil, fmt.Errorf("loading %d inboxes: %w", len(inboxes), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("loading %d inboxes: %w", len(inboxes), err)
	}
	actor, follower, inbox := make([]string, len(followers)), make([]string, len(followers)), make([]int64, len(followers))
	for i, f := range followers {
		if f.Inbox < 0 || f.Inbox >= len(ids) {
			return nil, fmt.Errorf("follower %s: no inbox %d of %d", f.Follower, f.Inbox, len(ids))
		}
		actor[i], follower[i], inbox[i] = f.ActorKey, f.Follower, ids[f.Inbox]
	}
	// A bulk follower's personal inbox is its shared one, and its Follow's
	// id is made up from its actor id (nothing will Undo it).
	if _, err := tx.Exec(ctx, `
		INSERT INTO ap_followers (actor_key, follower, inbox_id, personal_id, follow_id)
		SELECT a, f, i, i, f || '#follow' FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(a, f, i)`, actor, follower, inbox); err != nil {
		return nil, fmt.Errorf("loading %d followers: %w", len(followers), err)
	}
	return ids, nil
}

// RemoveAll deletes every fediverse row — actors, followers, inboxes,
// notes, activities, deliveries, the instance's keys, cached remote keys
// and seen signatures —
// in tx: the benchmark's clean slate before and after it measures, never
// for a running service (its followers would be forgotten without an
// Undo, and its key replaced).
func RemoveAll(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `DELETE FROM ap_deliveries; DELETE FROM ap_activities; DELETE FROM ap_notes; DELETE FROM ap_followers;
		DELETE FROM ap_actors; DELETE FROM ap_inboxes; DELETE FROM ap_keys; DELETE FROM ap_remote_keys; DELETE FROM ap_seen_signatures`)
	return err
}
