package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"followfeed/database"
	"followfeed/notify"
)

// MeasureDigests builds and sends one digest for each user through the real
// Digester (window reservation, user-match query, grouping, rendering, MIME,
// SMTP with pooled connections, ledger updates) with `workers` concurrent
// senders taking batch digests at a time, as the mail queue runs the send
// jobs (worker.DigestBatch rows per job). Every window covers (fromSeq,
// toSeq]. The rows are of kind 'manual' (as `followfeed digest --now`
// makes); the readers get daily digests with send_empty on, so every one is
// sent.
func MeasureDigests(ctx context.Context, db *database.DB, d *notify.Digester, users []int64, fromSeq, toSeq int64, workers, batch int) (DigestRun, error) {
	run := time.Now().UnixNano()
	// The readers take daily digests, empty ones too: a by-hand digest of
	// a reader whose digests are off is skipped, not sent.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO digest_schedules (user_id, frequency, send_empty) SELECT u, 'daily', true FROM unnest($1::bigint[]) AS u
		ON CONFLICT (user_id) DO UPDATE SET frequency = 'daily', send_empty = true`, users); err != nil {
		return DigestRun{}, fmt.Errorf("turning the bench readers' digests on: %w", err)
	}
	ids := make([]int64, len(users))
	for i, u := range users {
		err := db.Pool.QueryRow(ctx, `
			INSERT INTO digests (user_id, period, kind, from_seq, to_seq) VALUES ($1, $2, 'manual', $3, $4) RETURNING id`,
			u, fmt.Sprintf("bench:%d", run), fromSeq-1, toSeq).Scan(&ids[i])
		if err != nil {
			return DigestRun{}, err
		}
	}
	defer func() {
		_, _ = db.Pool.Exec(context.WithoutCancel(ctx), `DELETE FROM digests WHERE period = $1`, fmt.Sprintf("bench:%d", run))
	}()
	var next atomic.Int64
	var sent atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	cpu0 := readCPU()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(int64(batch)) - int64(batch))
				if i >= len(ids) {
					return
				}
				outs, err := d.SendBatch(ctx, ids[i:min(i+batch, len(ids))])
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				for _, out := range outs {
					if out.State == "sent" {
						sent.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	return DigestRun{
		Rate: float64(len(ids)) / elapsed.Seconds(),
		Sent: int(sent.Load()),
		Wall: elapsed,
		CPU:  readCPU().sub(cpu0),
	}, firstErr
}

// DigestRun is one measurement of MeasureDigests.
type DigestRun struct {
	Rate float64       // digests (sent or found empty) per second of wall time
	Sent int           // digests handed to the SMTP server
	Wall time.Duration // wall time of the run
	CPU  cpuUse        // CPU time spent during the run, by whom
}
