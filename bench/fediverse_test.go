package bench

import (
	"context"
	"testing"
)

// The fediverse measurement at a tiny scale through the real services: the
// hook queues (sends nothing), the fan-out writes one delivery per note and
// distinct inbox and one job per inbox, a Create is signed, and nothing of
// the fediverse is left afterwards.
func TestMeasureFediverseLeavesTheDataset(t *testing.T) {
	t.Parallel()
	s := Scale{Users: 60, CategoryFollow: 2, ResearcherFoll: 2, Papers: 2000, Researchers: 100, AuthorsPer: 2, AbstractChars: 100}
	d, svc := tiny(t, s)
	db, ctx := d.DB, context.Background()
	v, err := NewVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := MeasureMatch(ctx, db, svc.Papers(), svc.Matcher(), batchPapers(300, s, v, 1))
	defer RemoveBatch(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := MeasureFediverse(ctx, db, svc.Matcher(), svc.Identities(), svc.Papers(), mr.FromSeq, mr.ToSeq, 400, 40)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", fr)
	if fr.Actors == 0 || fr.Due != fr.Actors || fr.Notes == 0 {
		t.Fatalf("actors %d, due %d, notes %d", fr.Actors, fr.Due, fr.Notes)
	}
	if fr.Deliveries != fr.WantDeliveries || fr.Jobs != fr.WantJobs || fr.Jobs > fr.Inboxes {
		t.Errorf("deliveries %d (want %d), jobs %d (want %d, at most %d inboxes)", fr.Deliveries, fr.WantDeliveries, fr.Jobs, fr.WantJobs, fr.Inboxes)
	}
	if fr.Sign <= 0 || fr.SignN == 0 {
		t.Errorf("signing: %v over %d", fr.Sign, fr.SignN)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ap_actors) + (SELECT count(*) FROM ap_followers) + (SELECT count(*) FROM ap_inboxes)
		+ (SELECT count(*) FROM ap_deliveries) + (SELECT count(*) FROM river.river_job WHERE kind LIKE 'activitypub_%')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d fediverse rows left (%v)", left, err)
	}
	figs, detail := fediverseFigures(fr, mr, 2e9)
	if len(figs) != 2 || !figs[0].Pass || detail == "" {
		t.Errorf("figures %+v", figs)
	}
}
