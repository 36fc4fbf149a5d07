package bench

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/database"
	"followfeed/fediverse"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/match"
	"followfeed/worker"
)

// The fediverse measurement: a batch's notes to many followers on many
// shared inboxes. The followers are added at measure time (the dataset has
// none) as actors of the batch's researchers, each with its share of the
// followers spread over the inboxes at random, and removed at the end.

// Default sizes of the fediverse measurement (issue #29's figure).
const (
	FediverseFollowers = 10_000
	FediverseInboxes   = 1_000
	// fediverseActors is how many of the batch's researchers have
	// followers (FediverseFollowers / fediverseActors each).
	fediverseActors = 1_000
	// signRounds is how many Creates are signed for the signing figure.
	signRounds = 200
)

// FediverseResult reports MeasureFediverse.
type FediverseResult struct {
	Actors, Followers, Inboxes int
	// Hook is fediverse.Service.MatchHook inside the match job's
	// transaction (what the fediverse adds to the match job).
	Hook time.Duration
	// Due are the actors the hook marked due.
	Due int
	// Fanout is the fan-out job (a job of its own, after the match job):
	// Notes activities written, Deliveries ledger rows, Jobs delivery jobs
	// queued (one per inbox); nothing is sent by either.
	Fanout                  time.Duration
	Notes, Deliveries, Jobs int
	// WantDeliveries and WantJobs are what the ledger should hold, counted
	// from the notes and the followers (one delivery per note and distinct
	// inbox of its actor's followers; one job per such inbox).
	WantDeliveries, WantJobs int
	// Sign is the median time to build and sign one Create's POST
	// (fediverse.SignPost: SHA-256 digest, an RSA-SHA256 signature with a
	// 2048-bit key over five headers, which go-fed/httpsig sends as
	// algorithm="hs2019"), over SignN Creates.
	Sign  time.Duration
	SignN int
}

// MeasureFediverse measures the batch [fromSeq, toSeq] (stored, its match
// job run) reaching followers on inboxes through the fediverse: the match
// hook's cost, the fan-out job's, and a Create's signing cost. It leaves
// no fediverse row behind.
func MeasureFediverse(ctx context.Context, db *database.DB, m *match.Service, reg *identity.Registry, papers *catalog.Store,
	fromSeq, toSeq int64, followers, inboxes int) (FediverseResult, error) {
	res := FediverseResult{Followers: followers, Inboxes: inboxes}
	defer removeFediverse(ctx, db)
	removeFediverse(ctx, db)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		return res, err
	}
	base, _ := url.Parse("https://followfeed.bench.example")
	svc := fediverse.NewService(fediverse.Config{DB: db, BaseURL: base, Guard: channels.NewGuard(nil), Enqueuer: worker.NewEnqueuer(ins),
		Identities: reg, Names: follow.NewService(db), Matcher: m, HighSeq: papers.HighSeq})

	// The actors: the batch's researchers with the most papers in it.
	rows, err := db.Pool.Query(ctx, `
		SELECT key FROM paper_keys WHERE seq BETWEEN $1 AND $2 AND key LIKE 'researcher:%' AND NOT replacement
		GROUP BY key ORDER BY count(*) DESC, key LIMIT $3`, fromSeq, toSeq, fediverseActors)
	if err != nil {
		return res, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, err
	}
	res.Actors = len(keys)
	if len(keys) == 0 {
		return res, fmt.Errorf("the batch has no researcher keys")
	}
	r := mrand.New(mrand.NewPCG(29, 1))
	urls := make([]string, inboxes)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://server-%d.bench.example/inbox", i)
	}
	fs := make([]fediverse.BulkFollower, followers)
	for i := range fs {
		in := r.IntN(inboxes)
		fs[i] = fediverse.BulkFollower{ActorKey: keys[i%len(keys)], Follower: fmt.Sprintf("https://server-%d.bench.example/users/u%d", in, i), Inbox: in}
	}
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := fediverse.BulkLoad(ctx, tx, keys, fromSeq-1, urls, fs)
		return err
	}); err != nil {
		return res, fmt.Errorf("adding fediverse followers: %w", err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE ap_actors; ANALYZE ap_followers; ANALYZE ap_inboxes`); err != nil {
		return res, err
	}

	// The hook, in a transaction like the match job's, with the batch's
	// keys as the match job finds them.
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		br, err := m.AffectedUsers(ctx, tx, fromSeq, toSeq)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := svc.MatchHook(ctx, tx, slices.Concat(br.NewKeys, br.ReplacedKeys)); err != nil {
			return err
		}
		res.Hook = time.Since(start)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("the fediverse match hook: %w", err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ap_actors WHERE due_at IS NOT NULL`).Scan(&res.Due); err != nil {
		return res, err
	}
	start := time.Now()
	if res.Notes, err = svc.Fanout(ctx, nil); err != nil {
		return res, fmt.Errorf("the fediverse fan-out: %w", err)
	}
	res.Fanout = time.Since(start)
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ap_deliveries),
		(SELECT count(*) FROM river.river_job WHERE kind = 'activitypub_deliver'),
		(SELECT coalesce(sum(n.notes * i.inboxes), 0) FROM
			(SELECT actor_key, count(*) AS notes FROM ap_notes GROUP BY 1) n
			JOIN (SELECT actor_key, count(DISTINCT inbox_id) AS inboxes FROM ap_followers GROUP BY 1) i USING (actor_key)),
		(SELECT count(DISTINCT f.inbox_id) FROM ap_followers f WHERE f.actor_key IN (SELECT actor_key FROM ap_notes))`).
		Scan(&res.Deliveries, &res.Jobs, &res.WantDeliveries, &res.WantJobs); err != nil {
		return res, err
	}

	// Signing: the Creates' own bodies, to their inboxes.
	rows, err = db.Pool.Query(ctx, `SELECT body FROM ap_activities WHERE type = 'Create' ORDER BY id LIMIT $1`, signRounds)
	if err != nil {
		return res, err
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, err
	}
	key, err := rsa.GenerateKey(rand.Reader, fediverse.KeyBits)
	if err != nil {
		return res, err
	}
	times := make([]time.Duration, 0, len(bodies))
	date := time.Now().UTC().Format(http.TimeFormat)
	for i, b := range bodies {
		start := time.Now()
		if _, err := fediverse.SignPost(ctx, key, base.String()+"/ap/actors/x#main-key",
			fmt.Sprintf("https://server-%d.bench.example/inbox", i%inboxes), []byte(b), date); err != nil {
			return res, err
		}
		times = append(times, time.Since(start))
	}
	res.SignN = len(times)
	if len(times) > 0 {
		slices.Sort(times)
		res.Sign = times[len(times)/2]
	}
	return res, nil
}

// removeFediverse deletes every fediverse row and job the measurement
// added (the dataset has none of its own).
func removeFediverse(ctx context.Context, db *database.DB) {
	ctx = context.WithoutCancel(ctx)
	_ = db.InTx(ctx, func(tx pgx.Tx) error { return fediverse.RemoveAll(ctx, tx) })
	// The fan-out's and deliveries' jobs are River's rows.
	_, _ = db.Pool.Exec(ctx, `DELETE FROM river.river_job WHERE kind LIKE 'activitypub_%'`)
}

// fediverseFigures are the report's figures of a FediverseResult, beside
// the match job (mr) and its target.
func fediverseFigures(fr FediverseResult, mr MatchResult, budget time.Duration) ([]Figure, string) {
	total := mr.Match + fr.Hook
	figs := []Figure{
		{Key: "fediverse", Name: fmt.Sprintf("the match job with the fediverse hook: a batch's notes for %s followers on %s shared inboxes are queued, not sent",
			count(float64(fr.Followers)), count(float64(fr.Inboxes))),
			Target: "match + hook ≤ " + seconds(budget),
			Result: fmt.Sprintf("hook %s (%.2f s in all); fan-out job %.2f s", ms(fr.Hook), total.Seconds(), fr.Fanout.Seconds()),
			Value:  total.Seconds(), Pass: total <= budget},
		{Key: "fediverse-sign", Name: "build and sign one Create's POST (digest, RSA-SHA256 over five headers sent as algorithm hs2019, go-fed/httpsig)", Target: "—",
			Result: fmt.Sprintf("%.2f ms (median of %d)", float64(fr.Sign.Microseconds())/1000, fr.SignN), Value: float64(fr.Sign.Microseconds()) / 1000, Pass: true},
	}
	detail := fmt.Sprintf("Fediverse: %d of the batch's researchers (those with the most papers in it) are given actors with %d followers in all, spread at random over %d shared inboxes; "+
		"the match job's hook (`fediverse.Service.MatchHook`, in the match job's transaction with the batch's keys) marked %d actors due and queued one fan-out job, "+
		"sending nothing. The fan-out job (`Fanout`, a job of its own on the activitypub queue) then wrote %d Create activities (one note per paper and actor), "+
		"%d delivery rows (one per activity and distinct inbox of the actor's followers) and queued %d delivery jobs (one per inbox), in %.2f s. "+
		"Signing a Create's POST for one inbox costs %.2f ms (median of %d), so the deliveries of this batch cost about %.1f s of CPU spread over the delivery jobs. "+
		"The followers are removed at the end of the run.",
		fr.Actors, fr.Followers, fr.Inboxes, fr.Due, fr.Notes, fr.Deliveries, fr.Jobs, fr.Fanout.Seconds(),
		float64(fr.Sign.Microseconds())/1000, fr.SignN, float64(fr.Deliveries)*fr.Sign.Seconds())
	return figs, detail
}
