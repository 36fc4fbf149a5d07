package httpapi

import "testing"

// TestPageProblemSaysTheFormsLabels: a problem on a settings page names
// its field, and the fields its message names, by the form's labels; a
// hidden field's problem is its message alone, a path the pages have no
// label for stays as it is, and a word of the
// message's prose that is also a field's name ("query") is left alone.
func TestPageProblemSaysTheFormsLabels(t *testing.T) {
	for _, tc := range []struct{ field, message, want string }{
		{"pause.until", "must be after pause.from (2026-12-20): it is the day you are back",
			"Back on: must be after “From” (2026-12-20): it is the day you are back"},
		{"digest.weekdays", "choose at least one day; to get no digests set digest.frequency to off",
			"Daily digest on these days: choose at least one day; to get no digests set “How often” to off"},
		{"digest.weekday", "see digest.weekdays and digest.weekday", "On (weekly digests): see “Daily digest on these days” and “On (weekly digests)”"},
		{"query", "the query cannot be used: at character 5: …", "Words: the query cannot be used: at character 5: …"},
		{"up_to", "is not a place in your inbox: reload the page", "is not a place in your inbox: reload the page"},
		{"per_follow", "must be 1 or 0", "per_follow: must be 1 or 0"},
		{"", "snoozed_until is in the past", "“Snooze until” is in the past"},
	} {
		if got := pageProblem(tc.field, tc.message); got != tc.want {
			t.Errorf("pageProblem(%q, %q) = %q, want %q", tc.field, tc.message, got, tc.want)
		}
	}
}
