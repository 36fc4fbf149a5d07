package soak

import (
	"context"

	"followfeed/internal/pgcluster"
)

// newCluster initialises and starts a throwaway cluster (internal/pgcluster)
// for the scenarios that must not touch a shared server.
func newCluster(ctx context.Context, e *env) (*pgcluster.Cluster, error) {
	c, err := pgcluster.New(ctx)
	if err != nil {
		return nil, err
	}
	e.logf("throwaway PostgreSQL cluster in %s on port %d", c.Dir, c.Port)
	return c, nil
}
