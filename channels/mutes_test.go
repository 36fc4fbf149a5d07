package channels_test

import (
	"slices"
	"testing"
	"time"

	"followfeed/follow"
	"followfeed/mute"
)

// TestAMutedAuthorsPaperReachesNoWebhook: a user who muted an author
// (for every follow) gets none of their papers on an instant webhook or a
// filtered one; a mute scoped to the cs.LG follow keeps the paper on a
// channel for the user's researcher follow that still matches it; a
// user without mutes gets everything.
func TestAMutedAuthorsPaperReachesNoWebhook(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	muter := e.reader("muter", "UTC", 7, "monday", "category/cs.LG", "researcher/openalex:A5023888391")
	plain := e.reader("plain", "UTC", 7, "monday", "category/cs.LG")
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	person := follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}
	e.webhook(muter, "all", "instant")
	e.webhook(muter, "lg", "instant", lg)
	e.webhook(muter, "person", "instant", person)
	e.webhook(plain, "plain", "instant")
	svc := mute.NewService(e.db)
	for _, sp := range []mute.Spec{
		{What: follow.Target{Kind: follow.Researcher, ID: "openalex:A9"}},
		{What: person, Scope: &lg},
	} {
		if _, _, err := svc.Create(e.ctx, muter, sp); err != nil {
			t.Fatal(err)
		}
	}

	e.push(testPaper("2611.00001", "cs.LG", "openalex:A9"),
		testPaper("2611.00002", "cs.LG", "openalex:A5023888391"),
		testPaper("2611.00003", "cs.LG"))
	e.run()
	for ch, want := range map[string][]string{
		"all":    {"2611.00002", "2611.00003"},
		"lg":     {"2611.00003"},
		"person": {"2611.00002"},
		"plain":  {"2611.00001", "2611.00002", "2611.00003"},
	} {
		got := e.rcv.papers(ch)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("channel %s got %v, want %v", ch, got, want)
		}
	}
}
