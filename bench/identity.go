package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/identity"
)

// LateLinks reports LinkLate.
type LateLinks struct {
	Records int
	Took    time.Duration
	Updated int
}

// LinkLate takes the host ids of the late tenth of researchers off again
// (identity.RemoveKeys, so every run measures the same work) and links them through the real
// Registry.Put, in batches of identity.MaxBatch: the links a host makes
// after the papers arrived. Followers of the host ids get those papers
// from then on.
func LinkLate(ctx context.Context, d Deps, s Scale) (LateLinks, error) {
	var out LateLinks
	var recs []identity.Record
	var late []string
	for g := 10; g <= s.Researchers; g += 10 {
		host := follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("host:%d", g)}
		recs = append(recs, identity.Record{Kind: follow.Researcher,
			IDs: []string{fmt.Sprintf("s2:%d", g), host.ID}, Name: fmt.Sprintf("Researcher %d", g)})
		late = append(late, host.Key())
	}
	if err := d.DB.InTx(ctx, func(tx pgx.Tx) error {
		_, err := identity.RemoveKeys(ctx, tx, late)
		return err
	}); err != nil {
		return out, fmt.Errorf("unlinking the late researchers: %w", err)
	}
	start := time.Now()
	for len(recs) > 0 {
		n := min(len(recs), identity.MaxBatch)
		res, err := d.Identities.Put(ctx, recs[:n])
		if err != nil {
			return out, fmt.Errorf("linking the late researchers: %w", err)
		}
		out.Records += res.Received
		out.Updated += res.Updated
		recs = recs[n:]
	}
	out.Took = time.Since(start)
	return out, nil
}
