// Package relevance ranks papers for one user: from what the user follows
// (persons, institutions, papers) and says ("more like this", "less like
// this", "save"), it learns a linear model over a paper's features and
// scores a paper with the reasons it ranks.
//
// The features of a paper (Vector) are the stemmed words of its title and
// abstract exactly as package search makes them (search.Stems), weighted
// by TF-IDF with the document frequencies of a Corpus the caller keeps
// (per process, updated per ingest batch); its authors, as NameKey keys;
// its categories; its institutions; and the papers it cites, when the
// caller knows them. A Vector is computed once per paper and shared by
// every user's model.
//
// The model (Model) follows arxiv-sanity-lite's per-tag ranking: a linear
// support vector machine (L2-regularised, squared hinge loss, classes
// balanced) over TF-IDF vectors, trained per user on positive examples
// (the followed persons' own papers and the followed papers; the user's
// flow, weakly) against negatives (a background sample of other papers),
// by dual coordinate descent (Hsieh et al., ICML 2008; liblinear's
// solver), deterministically. To the learned word, author and category
// weights it adds fixed weights from the follows themselves: a followed
// person's papers, their co-authors' (from the followed persons' own
// papers), a followed institution's, and a paper citing a followed paper.
// Feedback ("more like this", "save", "less like this") is not an SVM
// example: retraining the whole model around a few clicks moved every
// paper a little and cost recall on the validation months of
// followfeed-lab rank-eval. It is a bounded, local part of the score
// (Params.MoreLift, LessPenalty): a paper like marked papers (the cosine
// of their strongest words beyond Params.FeedbackLike) rises or falls, by
// at most MoreLift or LessPenalty; a paper like none keeps the score its
// follows give it. Words alone find too few of a topic's papers on real
// abstracts, so marks also weigh on their topic, the marked papers'
// primary category (Params.LessTopic, MoreTopic: from the third net mark
// in one category, a weight on its feature; MarkedTopics says which
// categories and how far, as no reason names them). Train retrains from scratch, well within a click's
// minute: BenchmarkTrain (355 examples with abstracts) takes 6–35 ms on a
// shared 2-core machine.
//
// A Model is a value: MarshalBinary gives a few kilobytes for one bytea
// row, carrying its format Version; Score costs a lookup per feature of
// the paper (two buckets of a cuckoo table, compared without a branch),
// plus, for a user who marked papers, a probe per feature of an index of
// the marked papers' words, and allocates nothing once its first call
// made the table; Explain says why a
// paper ranks, as Reasons with a Text.
//
// The package is pure: no database, no HTTP, no job queue.
package relevance
