package fediverse

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/testdb"
)

// TestHookPlanIsSetBased: the match hook's statement joins the actors'
// expanded keys with the batch's keys once (a hash join), never scanning
// the batch's keys once per actor (a correlated subplan: 37 s for 1,000
// actors and 17,000 keys, where the set-based plan takes ~0.1 s).
func TestHookPlanIsSetBased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO identities (id, kind) SELECT g, 'researcher' FROM generate_series(1, 20000) g;
		INSERT INTO identity_keys (key, identity_id, source) SELECT 'researcher:s2:' || g, g, 'paper' FROM generate_series(1, 20000) g;
		INSERT INTO identity_keys (key, identity_id, source) SELECT 'researcher:host:' || g, g, 'paper' FROM generate_series(1, 20000) g;
		INSERT INTO ap_actors (key, watermark) SELECT 'researcher:host:' || (g * 7), 0 FROM generate_series(1, 1000) g;
		INSERT INTO ap_inboxes (url, host) VALUES ('https://x.example/inbox', 'x.example');
		INSERT INTO ap_followers (actor_key, follower, inbox_id, personal_id, follow_id) SELECT key, 'f' || key, 1, 1, 'x' FROM ap_actors;
		ANALYZE`)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 17000)
	for i := range keys {
		keys[i] = fmt.Sprintf("researcher:s2:%d", i)
	}
	for _, mode := range []string{"auto", "force_custom_plan", "force_generic_plan"} {
		err := db.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+hookSQL, keys, time.Now(), false)
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plan := strings.Join(lines, "\n")
			if strings.Contains(plan, "SubPlan") || !strings.Contains(plan, "Hash Join") {
				t.Errorf("plan_cache_mode %s: the hook's plan is not set-based:\n%s", mode, plan)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
