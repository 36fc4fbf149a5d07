package notify

// GroupPapers exposes groupPapers (planning and filling a digest's groups
// from one result) to the external tests.
var GroupPapers = groupPapers
