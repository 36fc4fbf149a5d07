package httpapi

import (
	"cmp"
	"slices"
	"strings"
)

// A problem names its field by the API's JSON path (apperr.Error.Field:
// "pause.until", "digest.weekdays"), and its message may name other
// fields so ("must be after pause.from"). A settings page shows the same
// problem to a reader who sees the form's labels, not the API: formLabels
// are those labels, by path, and pageProblem says the problem in them.
// The API's problems keep the paths (they are the contract for clients).

// formLabels are the settings pages' labels (web/templates) of the fields
// a form's problem can name, by the API path the problem names.
var formLabels = map[string]string{
	"pause.from":        "From",
	"pause.until":       "Back on",
	"pause":             "Pause",
	"snoozed_until":     "Snooze until",
	"digest.weekdays":   "Daily digest on these days",
	"digest.weekday":    "On (weekly digests)",
	"digest.max_papers": "At most this many papers",
	"digest.order":      "Order",
	"digest.frequency":  "How often",
	"digest.hour":       "At (local time)",
	"timezone":          "Time zone",
	"email":             "Email address",
	"type":              "Type",
	"url":               "URL",
	"homeserver":        "Homeserver",
	"room_id":           "Room id",
	"access_token":      "Access token",
	"mode":              "When",
	"after_pause":       "After a pause",
	"follows":           "Follows it carries",
	"follows_scope":     "Follows it carries",
	"follow":            "Follow",
	"what":              "What",
	"researcher":        "Researcher id",
	"query":             "Words",
	"category":          "Category",
	"cross_lists":       "Cross-lists",
	"label":             "Label",
	"order":             "Order",
	"state":             "State",
	// A form's hidden fields have no label: their problem is said alone
	// (its message tells the reader what to do, as "reload the page").
	"up_to":    "",
	"arxiv_id": "",
	"action":   "",
	"id":       "",
	"kind":     "",
}

// pathLabels replaces, in a message, the paths of formLabels that cannot
// be mistaken for a word of its prose (those with a dot or an
// underscore: "pause.from", "snoozed_until", not "query") by their labels
// in quotes.
var pathLabels = func() *strings.Replacer {
	var paths []string
	for path := range formLabels {
		if strings.ContainsAny(path, "._") {
			paths = append(paths, path)
		}
	}
	// Longest first: a Replacer tries its strings in order, and
	// "digest.weekday" must not take the start of "digest.weekdays".
	slices.SortFunc(paths, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	var pairs []string
	for _, path := range paths {
		pairs = append(pairs, path, "“"+formLabels[path]+"”")
	}
	return strings.NewReplacer(pairs...)
}()

// pageProblem is a problem of field (an API path; "" for none) with
// message as a settings page says it: led by the field's label (its path
// when the pages have no label for it; nothing for a hidden field) and
// with the paths it names replaced by their labels: "Back on: must be
// after “From” (2026-12-20)".
func pageProblem(field, message string) string {
	message = pathLabels.Replace(message)
	if field == "" {
		return message
	}
	label, ok := formLabels[field]
	switch {
	case !ok:
		label = field
	case label == "":
		return message
	}
	return label + ": " + message
}
