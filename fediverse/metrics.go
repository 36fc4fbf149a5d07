package fediverse

import (
	"context"
	"fmt"
	"sync"
)

// Metrics counts this process's delivery attempts by outcome (delivered,
// retry, failed, gone); worker's collector exports them with the follower
// count (followfeed_activitypub_*).
type Metrics struct {
	mu       sync.Mutex
	outcomes map[string]int64
}

func newMetrics() *Metrics { return &Metrics{outcomes: map[string]int64{}} }

func (m *Metrics) add(outcome string) {
	m.mu.Lock()
	m.outcomes[outcome]++
	m.mu.Unlock()
}

// Deliveries returns the attempts so far by outcome.
func (m *Metrics) Deliveries() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.outcomes))
	for k, v := range m.outcomes {
		out[k] = v
	}
	return out
}

// Metrics returns the service's counters.
func (s *Service) Metrics() *Metrics { return s.metrics }

// Stats are the figures the metrics export, read at scrape time.
type Stats struct {
	Followers      int64 // follows of followfeed's actors (one per actor and remote follower)
	Actors         int64 // actors with at least one follower
	Inboxes        int64 // delivery inboxes that are not disabled
	DisabledInbox  int64
	PendingDeliver int64 // deliveries waiting
}

// ReadStats counts followers, actors, inboxes and pending deliveries (a
// few index scans of small tables).
func (s *Service) ReadStats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.Pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM ap_followers),
		       (SELECT count(DISTINCT actor_key) FROM ap_followers),
		       (SELECT count(*) FILTER (WHERE disabled_at IS NULL) FROM ap_inboxes),
		       (SELECT count(*) FILTER (WHERE disabled_at IS NOT NULL) FROM ap_inboxes),
		       (SELECT count(*) FROM ap_deliveries WHERE state = 'pending')`).
		Scan(&st.Followers, &st.Actors, &st.Inboxes, &st.DisabledInbox, &st.PendingDeliver)
	if err != nil {
		return st, fmt.Errorf("reading ActivityPub stats: %w", err)
	}
	return st, nil
}
