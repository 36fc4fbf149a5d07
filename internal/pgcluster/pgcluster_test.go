package pgcluster

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
)

// TestClustersMadeAtOnce: clusters made at the same time (as parallel
// tests and test binaries of several packages make them) each start, on
// ports of their own, though each picked the first free port.
func TestClustersMadeAtOnce(t *testing.T) {
	if _, err := Bin(); errors.Is(err, ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	var (
		wg   sync.WaitGroup
		cs   [2]*Cluster
		errs [2]error
	)
	for i := range cs {
		wg.Go(func() { cs[i], errs[i] = New(context.Background()) })
	}
	wg.Wait()
	for i, c := range cs {
		if c != nil {
			t.Cleanup(c.Destroy)
		}
		if errs[i] != nil {
			t.Errorf("cluster %d: %v", i, errs[i])
		}
	}
	if cs[0] != nil && cs[1] != nil && cs[0].Port == cs[1].Port {
		t.Errorf("both clusters on port %d", cs[0].Port)
	}
}
