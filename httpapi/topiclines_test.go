package httpapi

import (
	"testing"

	"followfeed/relevance"
)

// TestTopicLinesSayTheMarksAndTheFollows: the settings page's lines for
// the topics the marks move say the effect, the category by name, the
// marks that count, the follows' papers that take a "less" back (only
// where "less" leads), and how much of the effect is reached short of
// all of it; a cancelled category says it did not move, with no share.
func TestTopicLinesSayTheMarksAndTheFollows(t *testing.T) {
	got := topicLines([]relevance.Topic{
		{Category: "cs.CL", Less: 7, Follows: 3, Share: 1.0 / 3, Weight: -0.03},
		{Category: "cs.CV", More: 5, Follows: 2, Share: 1, Weight: 0.05},
		{Category: "astro-ph.SR", Less: 4, Follows: 3},
		{Category: "xx.YY", Less: 3, More: 3},
	})
	want := []topicLine{
		{Effect: "Fewer", Where: "Computation and Language (cs.CL)", Marks: "7 marked “Less like this”; 3 recent papers there from your follows take back one “less” each", Part: "33% of the full effect so far"},
		{Effect: "More", Where: "Computer Vision and Pattern Recognition (cs.CV)", Marks: "5 marked “More like this” or saved"},
		{Effect: "Not moved:", Where: "Solar and Stellar Astrophysics (astro-ph.SR)", Marks: "4 marked “Less like this”; 3 recent papers there from your follows take back one “less” each"},
		{Effect: "Not moved:", Where: "xx.YY", Marks: "3 marked “Less like this”, 3 “More like this” or saved"},
	}
	if len(got) != len(want) {
		t.Fatalf("topicLines: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
