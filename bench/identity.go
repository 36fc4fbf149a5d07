package bench

import (
	"context"
	"fmt"
	"time"

	"followfeed/follow"
	"followfeed/identity"
)

// identitySteps are the generator's identity registry at scale s: every
// researcher of the pool is one identity named "Researcher N" with two or
// three ids — s2:N (what papers carry), host:N (what the host's Follow
// button sends; half the researcher follows use it) and, for every second
// one, openalex:AN. One researcher in ten (N divisible by 10) has no host
// id yet: LinkLate links it during the run, after the papers arrived.
func identitySteps(s Scale) []struct {
	name string
	sql  string
	args []any
} {
	return []struct {
		name string
		sql  string
		args []any
	}{
		{"identities", `INSERT INTO identities (id, kind, name, name_source)
			SELECT g, 'researcher', 'Researcher ' || g, 'host' FROM generate_series(1, $1) g`, []any{s.Researchers}},
		{"identity sequence", `SELECT setval(pg_get_serial_sequence('identities', 'id'), $1)`, []any{s.Researchers}},
		{"identity keys", `INSERT INTO identity_keys (key, identity_id, source)
			SELECT 'researcher:s2:' || g, g, 'host' FROM generate_series(1, $1) g
			UNION ALL
			SELECT 'researcher:host:' || g, g, 'host' FROM generate_series(1, $1) g WHERE g % 10 <> 0
			UNION ALL
			SELECT 'researcher:openalex:A' || g, g, 'host' FROM generate_series(1, $1) g WHERE g % 2 = 0`, []any{s.Researchers}},
	}
}

// LateLinks reports LinkLate.
type LateLinks struct {
	Records int
	Took    time.Duration
	Updated int
}

// LinkLate takes the host ids of the late tenth of researchers off again
// (so every run measures the same work) and links them through the real
// Registry.Put, in batches of identity.MaxBatch: the links a host makes
// after the papers arrived. Followers of the host ids get those papers
// from then on.
func LinkLate(ctx context.Context, d Deps, s Scale) (LateLinks, error) {
	var out LateLinks
	if _, err := d.DB.Pool.Exec(ctx, `
		DELETE FROM identity_keys WHERE key = ANY (ARRAY(
			SELECT 'researcher:host:' || g FROM generate_series(10, $1, 10) g))`, s.Researchers); err != nil {
		return out, fmt.Errorf("unlinking the late researchers: %w", err)
	}
	var recs []identity.Record
	for g := 10; g <= s.Researchers; g += 10 {
		recs = append(recs, identity.Record{Kind: follow.Researcher,
			IDs: []string{fmt.Sprintf("s2:%d", g), fmt.Sprintf("host:%d", g)}, Name: fmt.Sprintf("Researcher %d", g)})
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
