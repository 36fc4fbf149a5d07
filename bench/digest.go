package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/notify"
)

// MeasureDigests builds and sends one digest for each user through the real
// Digester (window reservation, user-match query, grouping, rendering, MIME,
// SMTP with pooled connections, ledger updates) with `workers` concurrent
// senders taking batch digests at a time, as the mail queue runs the send
// jobs (worker.DigestBatch rows per job). Every window covers (fromSeq,
// toSeq]. The rows are of kind 'manual' (as `followfeed digest --now`
// makes), written with their windows by notify.PutManualDigests; the
// users get daily digests with send_empty on (notify.PutDigestSettings:
// no digest time, so no scheduled digest follows), so every one is sent.
func MeasureDigests(ctx context.Context, db *database.DB, d *notify.Digester, users []int64, fromSeq, toSeq int64, workers, batch int) (DigestRun, error) {
	return MeasureDigestsOrdered(ctx, db, d, users, fromSeq, toSeq, workers, batch, notify.OrderNewest, 0)
}

// MeasureDigestsOrdered is MeasureDigests with the users' digests in
// order, within a budget of maxPapers (notify.PutDigestOrder; KeepFollowed
// on): with notify.OrderBest every digest ranks its window's candidates
// through the Digester's Ranker. The users are put back to newest first
// afterwards.
func MeasureDigestsOrdered(ctx context.Context, db *database.DB, d *notify.Digester, users []int64, fromSeq, toSeq int64, workers, batch int,
	order notify.Order, maxPapers int) (DigestRun, error) {
	run := fmt.Sprintf("bench:%d", time.Now().UnixNano())
	// The users take daily digests, empty ones too: a by-hand digest of
	// a user whose digests are off is skipped, not sent.
	ds := make([]notify.ManualDigest, len(users))
	for i, u := range users {
		ds[i] = notify.ManualDigest{UserID: u, Period: run, FromSeq: fromSeq - 1, ToSeq: toSeq}
	}
	var ids []int64
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := notify.PutDigestSettings(ctx, tx, users, notify.Daily, true); err != nil {
			return fmt.Errorf("turning the bench users' digests on: %w", err)
		}
		if _, err := notify.PutDigestOrder(ctx, tx, users, order, maxPapers, true); err != nil {
			return err
		}
		var err error
		ids, err = notify.PutManualDigests(ctx, tx, ds)
		return err
	}); err != nil {
		return DigestRun{}, err
	}
	var listed int
	defer func() {
		_ = db.InTx(context.WithoutCancel(ctx), func(tx pgx.Tx) error {
			if _, err := notify.PutDigestOrder(context.WithoutCancel(ctx), tx, users, notify.OrderNewest, 0, true); err != nil {
				return err
			}
			_, err := notify.DeleteDigests(context.WithoutCancel(ctx), tx, ids)
			return err
		})
	}()
	var next atomic.Int64
	var sent atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	own0, err := databaseBackends(ctx, db)
	if err != nil {
		return DigestRun{}, err
	}
	// Each run starts from a collected heap, as a Go benchmark does
	// (testing.B collects before it times): runs of different kinds
	// alternate, and without it a run paid the collection of the garbage
	// the run before it left (a best-first run's, before the controls'),
	// which its own work did not make.
	runtime.GC()
	cpu0 := readCPU()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pprof.SetGoroutineLabels(ctx) // profiled's label, if any
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
	cpu1 := readCPU()
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		listed, err = notify.ListedPapers(ctx, tx, ids)
		return err
	}); err != nil {
		return DigestRun{}, errors.Join(firstErr, err)
	}
	own1, err := databaseBackends(ctx, db)
	if err != nil {
		return DigestRun{}, errors.Join(firstErr, err)
	}
	var ownPG time.Duration
	for pid, t := range cpu1.pg {
		if own0[pid] || own1[pid] {
			ownPG += t - cpu0.pg[pid]
		}
	}
	return DigestRun{
		Rate:       float64(len(ids)) / elapsed.Seconds(),
		Digests:    len(ids),
		Sent:       int(sent.Load()),
		Listed:     listed,
		Wall:       elapsed,
		CPU:        cpu1.sub(cpu0),
		PostgresDB: ownPG,
	}, firstErr
}

// databaseBackends are the processes of the PostgreSQL backends connected
// to db's database now (the pool's connections, which live through a run):
// on a server shared with other work, their CPU is the database's share
// of the digests, which the sum over every postgres process overstates.
// It misses the server's shared processes (WAL writer, checkpointer).
func databaseBackends(ctx context.Context, db *database.DB) (map[int]bool, error) {
	rows, err := db.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return nil, fmt.Errorf("listing the database's backends: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("listing the database's backends: %w", err)
	}
	out := make(map[int]bool, len(pids))
	for _, p := range pids {
		out[int(p)] = true
	}
	return out, nil
}

// DigestRun is one measurement of MeasureDigests.
type DigestRun struct {
	Rate    float64       // digests (sent or found empty) per second of wall time
	Digests int           // digests built (sent or found empty)
	Sent    int           // digests handed to the SMTP server
	Listed  int           // papers the digests sent listed, in all
	Wall    time.Duration // wall time of the run
	CPU     cpuUse        // CPU time spent during the run, by whom
	// PostgresDB is the CPU of the backends connected to the measured
	// database (see databaseBackends), part of CPU.Postgres.
	PostgresDB time.Duration
}

// PerDigest is the CPU time per digest of the run: the whole machine, this
// process (the code under measurement and the in-process SMTP sink), and
// the measured database's PostgreSQL backends.
func (r DigestRun) PerDigest() (machine, self, postgres time.Duration) {
	n := time.Duration(max(r.Digests, 1))
	return r.CPU.Machine / n, r.CPU.Self / n, r.PostgresDB / n
}

// msPrecise formats d in milliseconds with two decimals.
func msPrecise(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}

// String summarises the run: rate, wall time, and the CPU per digest.
func (r DigestRun) String() string {
	m, s, p := r.PerDigest()
	return fmt.Sprintf("%.0f digests/s (%d in %.1f s, %d sent, %.1f papers each); CPU per digest: followfeed + SMTP sink %s, "+
		"PostgreSQL (this database's backends) %s, whole machine %s",
		r.Rate, r.Digests, r.Wall.Seconds(), r.Sent, r.PapersEach(), msPrecise(s), msPrecise(p), msPrecise(m))
}

// PapersEach is how many papers a digest sent listed, on average.
func (r DigestRun) PapersEach() float64 {
	return float64(r.Listed) / float64(max(r.Sent, 1))
}

// profiled returns ctx labelled for a CPU profile (--cpuprofile) as the
// digests run name: the digest runs' workers carry the label, so
// `go tool pprof -tagfocus digests=best` shows one kind of run alone.
func profiled(ctx context.Context, name string) context.Context {
	return pprof.WithLabels(ctx, pprof.Labels("digests", name))
}

// digestRounds is how many rounds the digest figures measure: each round
// runs newest first, best first and the controls' runs in turn, so each
// kind's run has a newest-first run beside it in time. Nine, not five:
// on the workplace's shared 2-core machines the rounds' paired ratios
// spread ±12% about their median (one run is some 3 s), so five rounds
// could not tell a figure at 90% from one at 85%; the median of nine is
// some quarter tighter (√(9/5)), at some six more minutes of make bench
// (S and M).
const digestRounds = 9

// byRate returns a copy of runs sorted by rate, slowest first.
func byRate(runs []DigestRun) []DigestRun {
	out := slices.Clone(runs)
	slices.SortFunc(out, func(a, b DigestRun) int { return cmp.Compare(a.Rate, b.Rate) })
	return out
}

// rateSpread returns the median run of runs by rate (the upper one of an
// even number) and the least and most rate: what a figure reports.
func rateSpread(runs []DigestRun) (med DigestRun, lo, hi float64) {
	sorted := byRate(runs)
	return sorted[len(sorted)/2], sorted[0].Rate, sorted[len(sorted)-1].Rate
}

// median is the median run of runs by rate (rateSpread's).
func median(runs []DigestRun) DigestRun {
	m, _, _ := rateSpread(runs)
	return m
}

// Paired is how a kind of digest run compares with the newest-first runs
// of the same rounds: Share the median over the rounds of its rate over
// the newest-first run's of its round, Low and High the least and most
// of those ratios. Pairing each run with the newest-first run measured
// beside it, rather than dividing one median rate by the other, leaves
// out what a shared machine does to both within a round: on this
// workplace's 2-core machines a neighbour's burst has moved one run of
// three by 3× (newest first at M 270–789 / s within one make bench), and
// the ratio of the medians with it.
//
// CPU is the same median of the rounds' ratios of CPU per digest
// (followfeed + SMTP sink and this database's PostgreSQL backends, the
// newest-first run's over this run's), 0 when a round measured none: what
// the kind costs, less moved by a neighbour taking the cores than the
// rate. The figures' verdicts are the rate's (Share), as their issues ask.
type Paired struct {
	Share, Low, High float64
	CPU              float64
	Rounds           int
}

// pairRuns pairs runs[i] with plain[i] (the same round's), over the rounds
// both have; the zero Paired when there are none.
func pairRuns(plain, runs []DigestRun) Paired {
	n := min(len(plain), len(runs))
	if n == 0 {
		return Paired{}
	}
	ratios, cpu := make([]float64, n), make([]float64, 0, n)
	for i := range n {
		ratios[i] = runs[i].Rate / max(plain[i].Rate, 1)
		if a, b := digestCPU(plain[i]), digestCPU(runs[i]); a > 0 && b > 0 {
			cpu = append(cpu, float64(a)/float64(b))
		}
	}
	slices.Sort(ratios)
	p := Paired{Share: ratios[n/2], Low: ratios[0], High: ratios[n-1], Rounds: n}
	if len(cpu) == n {
		slices.Sort(cpu)
		p.CPU = cpu[n/2]
	}
	return p
}

// digestCPU is r's CPU per digest of followfeed (with the SMTP sink) and
// of the measured database's PostgreSQL backends.
func digestCPU(r DigestRun) time.Duration {
	_, self, pg := r.PerDigest()
	return self + pg
}

// String is p as "87% (the median of 5 rounds' ratios, each run beside
// its round's newest first: 74–95%; by CPU per digest 89%)", without the
// CPU's part when it is 0.
func (p Paired) String() string {
	cpu := ""
	if p.CPU > 0 {
		cpu = fmt.Sprintf("; by CPU per digest %.0f%%", 100*p.CPU)
	}
	return fmt.Sprintf("%.0f%% (the median of %d rounds' ratios, each run beside its round's newest first: %.0f–%.0f%%%s)", 100*p.Share, p.Rounds, 100*p.Low, 100*p.High, cpu)
}
