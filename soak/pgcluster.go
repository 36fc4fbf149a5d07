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

// newClusterDB starts a throwaway cluster with a fresh, migrated database
// for scenario on it; done drops the database and destroys the cluster.
func newClusterDB(ctx context.Context, e *env, scenario string) (cl *pgcluster.Cluster, db *freshDB, done func(), err error) {
	if cl, err = newCluster(ctx, e); err != nil {
		return nil, nil, nil, err
	}
	if db, err = newFreshDB(ctx, e, cl.URL("postgres"), scenario); err != nil {
		cl.Destroy()
		return nil, nil, nil, err
	}
	return cl, db, func() { db.drop(ctx); cl.Destroy() }, nil
}
