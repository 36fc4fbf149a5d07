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
	// largest in magnitude): it bounds a model's size and Score's table,
	// and what a digest reads, decodes and looks up per user.
	MaxLearned int
	// SourceWeight is each kind of example's weight in training (0: the
	// SVM does not learn from that kind; the product's feedback is
	// applied by MoreLift and LessPenalty instead).
	SourceWeight [numSources]float32

	// MoreLift and LessPenalty are the most a paper's score rises for
	// being like papers the user marked "more" or saved, and falls for
	// being like papers marked "less": the feedback's part of the score,
	// bounded and local. Each is applied in proportion to the sum, over
	// the marked papers, of how far the paper's likeness to one (the
	// cosine of the marked paper's strongest words, as LikeThreshold's)
	// goes beyond FeedbackLike (scaled to 1 at a likeness of 1), the sum
	// capped at 1: a paper like no marked paper keeps the score its
	// follows give it, one like several moves the most.
	MoreLift, LessPenalty, FeedbackLike float32
	// LessTopic and MoreTopic are the most every paper of a category
	// falls for the papers of that primary category the user marked
	// "less", and rises for those marked "more" or saved: the marks'
	// topic, where the words of one paper are too few to find its
	// neighbours (on real abstracts five "less" clicks on one
	// subcategory's papers moved none of its other papers by their
	// words). A category's marks count net (less minus more and saved;
	// a less also minus the followed persons' papers there), nothing for
	// one or two (they say the papers), a part from the third (of five:
	// a third at the third, two at the fourth) and the whole of LessTopic
	// (or MoreTopic) from TopicMarks net marks on (MarkedTopics). It
	// is a weight on the category's feature (of value CategoryWeight),
	// so it moves every paper listed in the category, cross-lists too,
	// and costs Score nothing.
	LessTopic, MoreTopic float32
	TopicMarks           int

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
		// Recall on the validation months is the same from 1,500 down to
		// 300, and down to 150 for the words alone (no authors): 500 keeps
		// three times that knee at a third of 1,500's weights
		// (BENCHMARKS.md's ranking section).
		MaxLearned: 500,
		// Feedback is not an SVM example (SourceWeight 0 for More, Saved
		// and Less): as examples, five "more" clicks on co-authors' papers
		// and ten "less" on random ones moved every paper a little (the
		// whole model is retrained around them) and cost recall@10 on
		// the validation months (−0.016 on 9710), however small their
		// weights. Instead marks move only the papers like them (see
		// MoreLift), from a likeness of 0.4 up: "less" by up to 1 (five
		// "less" clicks on a topic the followed person also writes about
		// take it out of the top, TestLessMovesATopicOutOfTheTop, also
		// in a flow, TestLessMovesATopicDownInAFlow), "more" by up to 0.2
		// (the least at which four clicks lift a topic above papers the
		// follows say nothing about, TestMoreLiftsATopic; not above the
		// followed persons' and their co-authors' papers).
		// A paper of the user's flow (a followed category's or query's)
		// weighs a fifth of one of the followed person's: the user chose
		// the flow, not the paper.
		SourceWeight: [numSources]float32{
			Own: 1, Followed: 1, More: 0, Saved: 0, Flow: 0.2, Less: 0, Background: 1,
		},
		MoreLift:     0.2,
		LessPenalty:  1,
		FeedbackLike: 0.4,
		// Five net "less" marks in a category take 0.1 off its papers, a
		// flow's top 20 on real abstracts (its scores spread over some
		// 0.25 in all, 0.1 in the top 20): three marks nudge the
		// category down a few places, five take it out of the top 20;
		// never below a followed person's paper (PersonBoost 1), which
		// the budget keeps anyway. "More" lifts half of that, as
		// MoreLift is the gentler of the two
		// (TestTopicMarksMoveASubcategoryOnRealAbstracts).
		LessTopic:        0.1,
		MoreTopic:        0.05,
		TopicMarks:       5,
		PersonBoost:      1,
		CoauthorBoost:    0.5,
		InstitutionBoost: 0.3,
		CiteBoost:        0.5,
		MaxCoauthors:     300,
		LikeThreshold:    0.3,
	}
}
