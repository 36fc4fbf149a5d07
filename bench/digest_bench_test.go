package bench

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"followfeed/match"
	"followfeed/notify"
)

// digestProfile, when set, makes BenchmarkDigestBatch profile each
// order's measured runs only (not the dataset's build): CPU to
// digestProfile + "-newest.pprof" and "-best.pprof", for go tool pprof
// -diff_base, and allocations before and after them to "-newest-allocs0.pprof"
// and "-newest-allocs1.pprof" (best's alike), for -diff_base of the two.
var digestProfile = flag.String("digestprofile", "", "BenchmarkDigestBatch: profile each order's runs to `prefix`-{newest,best}[-allocs0|-allocs1].pprof")

// BenchmarkDigestBatch is the best-first digests' cost beside newest
// first's, as make bench measures them (MeasureDigestsOrdered: the real
// services over a generated dataset, SendBatch to MAIL_DIR) at a batch's
// size: each op is one send job's batch of 50 digests, every user's
// window a day of realistic papers (the first fifth of a batchPapers
// batch of 5,000) whose newest 250 are the candidates; best first lists
// the budget of notify.MaxPapersLimit, newest first up to
// notify.MaxPerDigest. A first best-first run, untimed, trains the users'
// first models and builds the ranking corpus. Besides ns/op (wall, which
// waits on PostgreSQL and shares two cores with whatever else runs) it
// reports the CPU per digest of this process (followfeed and the mail
// sink: what make bench reports) and of the database's backends, and the
// papers each digest listed (and how many candidates each window had).
// Compare newest and best of the same run; to compare two trees, run
// their test binaries in turn. -digestprofile profiles the measured runs
// alone.
func BenchmarkDigestBatch(b *testing.B) {
	s := Scale{Users: 400, CategoryFollow: 5, ResearcherFoll: 15, Papers: 20_000, Researchers: 20_000, AuthorsPer: 4, AbstractChars: 1200, Identities: 2}
	d, _ := tiny(b, s)
	ctx := context.Background()
	v, err := NewVocabulary()
	if err != nil {
		b.Fatal(err)
	}
	mr, err := MeasureMatch(ctx, d.DB, d.Papers, d.Matcher, batchPapers(5000, s, v, 1))
	if err != nil {
		b.Fatal(err)
	}
	users, err := SampleUsers(ctx, d.DB, 50)
	if err != nil {
		b.Fatal(err)
	}
	dayEnd := mr.FromSeq + (mr.ToSeq-mr.FromSeq)/5
	qs := make([]match.Query, len(users))
	for i, u := range users {
		qs[i] = match.Query{UserID: u, AfterSeq: mr.FromSeq - 1, UpToSeq: dayEnd, Limit: 250, IDsOnly: true}
	}
	windows, err := d.Matcher.MatchedMany(ctx, qs)
	if err != nil {
		b.Fatal(err)
	}
	candidates := 0
	for _, w := range windows {
		candidates += len(w.Papers)
	}
	run := func(order notify.Order) DigestRun {
		r, err := MeasureDigestsOrdered(ctx, d.DB, d.Digester, users, mr.FromSeq, dayEnd, 1, len(users), order, notify.MaxPapersLimit)
		if err != nil || r.Sent != len(users) {
			b.Fatalf("%s: %+v, %v", order, r, err)
		}
		return r
	}
	run(notify.OrderBest) // the cold start and the corpus
	for _, order := range []notify.Order{notify.OrderNewest, notify.OrderBest} {
		b.Run(string(order), func(b *testing.B) {
			var self, pg time.Duration
			digests, listed := 0, 0
			if *digestProfile != "" {
				f, err := os.Create(*digestProfile + "-" + string(order) + ".pprof")
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				defer func() { pprof.StopCPUProfile(); f.Close() }()
				heap := func(name string) {
					if f, err := os.Create(*digestProfile + "-" + string(order) + "-" + name + ".pprof"); err == nil {
						_ = pprof.Lookup("allocs").WriteTo(f, 0)
						f.Close()
					}
				}
				runtime.GC()
				heap("allocs0")
				defer func() { runtime.GC(); heap("allocs1") }()
			}
			for b.Loop() {
				r := run(order)
				self, pg = self+r.CPU.Self, pg+r.PostgresDB
				digests, listed = digests+r.Digests, listed+r.Listed
			}
			ms := func(t time.Duration) float64 { return t.Seconds() * 1000 / float64(max(digests, 1)) }
			b.ReportMetric(ms(self), "cpu-ms/digest")
			b.ReportMetric(ms(pg), "pg-ms/digest")
			b.ReportMetric(float64(listed)/float64(max(digests, 1)), "papers/digest")
			b.ReportMetric(float64(candidates)/float64(len(windows)), "candidates/digest")
		})
	}
}
