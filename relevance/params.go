package relevance

// Params are the weights and limits of the features and of training. The
// product uses DefaultParams; the lab's evaluation (followfeed-lab
// rank-eval) varies them on its validation months. Vectors and the
// models scored on them must come from the same Params.
type Params struct {
	// TitleRepeat is how many times a title's words count against the
	// abstract's once (a title says in a few words what the paper is).
	TitleRepeat int
	// AuthorWeight is an author's feature value, divided by the square
	// root of the paper's number of authors (one co-author of three says
	// more than one of fifty).
	AuthorWeight float32
	// CategoryWeight is a category's feature value.
	CategoryWeight float32
	// InstitutionWeight and CiteWeight are the values of an institution's
	// and of a cited paper's feature.
	InstitutionWeight, CiteWeight float32

	// C is the SVM's cost of a margin violation, per unit of example
	// weight (arxiv-sanity-lite: 0.01 over all papers; larger here, where
	// the examples are few).
	C float64
	// Epochs bounds the passes of coordinate descent; Tolerance stops it
	// earlier, when the projected gradients span less than it.
	Epochs    int
	Tolerance float64
	// Seed fixes the order coordinate descent visits the examples in:
	// one Seed, one model.
	Seed uint64
	// MaxLearned is the number of learned weights a model keeps (the
	// largest in magnitude): it bounds a model's size and Score's table.
	MaxLearned int
	// SourceWeight is each kind of example's weight in training.
	SourceWeight [numSources]float32

	// PersonBoost, CoauthorBoost, InstitutionBoost and CiteBoost are the
	// fixed weights added to the feature of a followed person, of a
	// co-author of one (times 1 + ln of the number of their papers
	// together), of a followed institution and of a followed paper cited.
	PersonBoost, CoauthorBoost, InstitutionBoost, CiteBoost float32
	// MaxCoauthors bounds the co-authors a model keeps (the most frequent).
	MaxCoauthors int

	// LikeThreshold is how close (the cosine of their strongest words) a
	// paper must be to a marked or followed paper to be "like" it.
	LikeThreshold float32
}

// DefaultParams returns the parameters the product uses, chosen on the
// validation months of followfeed-lab rank-eval (BENCHMARKS.md says how).
func DefaultParams() Params {
	return Params{
		TitleRepeat:       2,
		AuthorWeight:      1,
		CategoryWeight:    0.2,
		InstitutionWeight: 0.5,
		CiteWeight:        0.5,
		C:                 0.03,
		Epochs:            100,
		Tolerance:         1e-3,
		Seed:              1,
		MaxLearned:        1500,
		// A click is weaker evidence than a paper the followed person
		// wrote: at equal weight, five "more" clicks on co-authors' papers
		// pulled the co-authors' other topics above the user's own papers
		// on the validation months (a tenth kept them near neutral there).
		// A "less" weighs one own paper (on the positives' scale, see
		// learn): five "less" clicks on a topic the followed person also
		// writes about take it out of the top (TestLessMovesATopicOutOfTheTop).
		// A paper of the user's flow (a followed category's or query's)
		// weighs a fifth of one: the user chose the flow, not the paper;
		// it is there so that a "less" moves a topic down within the flow
		// of a user who follows no person (TestLessMovesATopicDownInAFlow).
		SourceWeight: [numSources]float32{
			Own: 1, Followed: 1, More: 0.1, Saved: 0.1, Flow: 0.2, Less: 1, Background: 1,
		},
		PersonBoost:      1,
		CoauthorBoost:    0.5,
		InstitutionBoost: 0.3,
		CiteBoost:        0.5,
		MaxCoauthors:     300,
		LikeThreshold:    0.3,
	}
}
