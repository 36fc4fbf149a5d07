package harvest_test

import "followfeed/internal/testpaper"

var (
	newStore  = testpaper.NewStore
	testPaper = testpaper.New
	count     = testpaper.Count
	matchJobs = testpaper.MatchJobs
)
