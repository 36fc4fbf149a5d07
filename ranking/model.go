package ranking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/relevance"
)

// Bounds of what a model learns from.
const (
	// ownPerPerson is how many of a followed person's newest papers are
	// positive examples; maxOwn bounds them over all followed persons,
	// shared out evenly (perPerson).
	ownPerPerson = 30
	maxOwn       = 200
	// maxFeedback is how many of the user's newest feedback rows count.
	maxFeedback = 300
	// flowSize is how many of the user's newest matched papers are their
	// flow (relevance.Flow: weakly positive examples), those not already
	// examples of another kind.
	flowSize = 60
)

// FollowRetrainDelay is how long after a follow change a user's model is
// retrained: the changes of that time are learnt by one training (some 35
// ms of CPU each), so a user, or a host's script, that follows and
// unfollows in a burst does not train once per change. Feedback is
// learnt at once.
const FollowRetrainDelay = 2 * time.Minute

// changed counts one change of what userID's model learns from, in tx,
// and queues the model's retraining. With create false (a follow changed)
// a user without a ranking_models row is left alone: nothing ranks for
// them yet, and the first ranking trains from their follows as they are
// then; one with a row is retrained FollowRetrainDelay later, coalesced.
// Feedback creates the row (create true) and is retrained at once.
func (s *Service) changed(ctx context.Context, tx pgx.Tx, userID int64, create bool) error {
	var err error
	if create {
		_, err = tx.Exec(ctx, `
			INSERT INTO ranking_models AS m (user_id, changes) VALUES ($1, 1)
			ON CONFLICT (user_id) DO UPDATE SET changes = m.changes + 1`, userID)
	} else {
		var tag interface{ RowsAffected() int64 }
		tag, err = tx.Exec(ctx, `UPDATE ranking_models SET changes = changes + 1 WHERE user_id = $1`, userID)
		if err == nil && tag.RowsAffected() == 0 {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("counting a change of user %d's ranking: %w", userID, err)
	}
	if s.enq == nil {
		return nil
	}
	after := time.Duration(0)
	if !create {
		after = FollowRetrainDelay
	}
	if err := s.enq.EnqueueTrain(ctx, tx, []int64{userID}, after); err != nil {
		return fmt.Errorf("queueing the ranking of user %d: %w", userID, err)
	}
	return nil
}

// FollowChanged counts a change of userID's follows (t followed or
// unfollowed, or a paper said not to be by the person t: their papers are
// the model's examples) for their model, in the change's transaction: the
// follow.FollowHook and UnfollowHook of package ranking, and its
// identity.Registry.OnNotThisPerson hook. A user with a model gets it
// retrained FollowRetrainDelay later.
func (s *Service) FollowChanged(ctx context.Context, tx pgx.Tx, userID int64, _ follow.Target) error {
	return s.changed(ctx, tx, userID, false)
}

// Train retrains user userID's model when a change is due (the ranking job
// runs it): it reads the model's inputs in one snapshot, trains, and
// stores the model with the changes that snapshot saw, unless a newer
// model was stored meanwhile. It reports whether it trained; a user whose
// model is current (or who has none to keep: no row) is not trained.
// Every change that queues a training leaves a row, so a job that finds
// none is one of a user erased since (EraseUser): it is done.
func (s *Service) Train(ctx context.Context, userID int64) (bool, error) {
	in, err := s.inputs(ctx, userID)
	if err != nil || in == nil || !in.exists || in.trained >= in.changes {
		return false, err
	}
	return true, s.trainAndStore(ctx, in)
}

// Behind reports whether user userID's model has changes it has not
// learnt (a ranking_models row whose changes are past its trained): a
// coalesced job trains again when a change came during its training. It
// waits for a change being committed (FOR SHARE: a change holds the row
// from its count to its commit), so a change is either seen here or
// counted after this read, when its job is queued anew.
func (s *Service) Behind(ctx context.Context, userID int64) (bool, error) {
	var behind bool
	err := s.db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT changes > trained FROM ranking_models WHERE user_id = $1 FOR SHARE), false)`, userID).Scan(&behind)
	if err != nil {
		return false, fmt.Errorf("reading whether user %d's model is behind: %w", userID, err)
	}
	return behind, nil
}

// Topics are the arXiv categories user userID's marks move (the strongest
// first; relevance.MarkedTopics), as their stored model learned them, and
// whether marks or follows changed since it was trained (its job has yet
// to run, or a first model is yet to be trained: the topics may be behind).
// None for a user without a model, or with one trained before the topics
// were kept (until its next training).
func (s *Service) Topics(ctx context.Context, userID int64) ([]relevance.Topic, bool, error) {
	var topics []relevance.Topic
	var behind bool
	err := s.db.Pool.QueryRow(ctx, `
		SELECT coalesce(topics, '[]'), changes > trained FROM ranking_models WHERE user_id = $1`, userID).Scan(&topics, &behind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the topics of user %d's model: %w", userID, err)
	}
	return topics, behind, nil
}

// inputs is what a model learns from, read in one snapshot.
type inputs struct {
	userID            int64
	exists            bool  // a ranking_models row
	changes, trained  int64 // its counts (trained -1: never)
	follows           []follow.Expanded
	feedback          []feedbackRow
	followedPaperIDs  []int64 // papers.id of followed papers, stored
	followedArxivIDs  []string
	followedInstitute []string
}

type feedbackRow struct {
	paperID int64
	value   Value
}

// inputs reads userID's inputs; exists is false for a user without a
// ranking_models row (a user that does not exist reads as one without
// follows, feedback or row).
func (s *Service) inputs(ctx context.Context, userID int64) (*inputs, error) {
	in := &inputs{userID: userID, trained: -1}
	err := s.db.InTxIso(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT changes, trained FROM ranking_models WHERE user_id = $1`, userID).Scan(&in.changes, &in.trained)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("reading the ranking state of user %d: %w", userID, err)
		default:
			in.exists = true
		}
		var b pgx.Batch
		follow.QueueExpandedMany(&b, []int64{userID}, func(m map[int64][]follow.Expanded) { in.follows = m[userID] })
		b.Queue(`SELECT paper_id, value FROM feedback WHERE user_id = $1 ORDER BY updated_at DESC, paper_id DESC LIMIT $2`,
			userID, maxFeedback).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r feedbackRow
				var v string
				if err := rows.Scan(&r.paperID, &v); err != nil {
					return err
				}
				r.value = Value(v)
				in.feedback = append(in.feedback, r)
			}
			return rows.Err()
		})
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("reading the ranking inputs of user %d: %w", userID, err)
		}
		for _, f := range in.follows {
			switch f.Kind {
			case follow.Paper:
				id, err := catalog.LiveID(ctx, tx, f.ID)
				if err != nil {
					return err
				}
				in.followedArxivIDs = append(in.followedArxivIDs, f.ID)
				if id != 0 {
					in.followedPaperIDs = append(in.followedPaperIDs, id)
				}
			case follow.Institution:
				in.followedInstitute = append(in.followedInstitute, f.ID)
			}
		}
		return nil
	})
	return in, err
}

// trainAndStore trains in's model and stores it (storeModel).
func (s *Service) trainAndStore(ctx context.Context, in *inputs) error {
	t, err := s.train(ctx, in)
	if err != nil {
		return err
	}
	return s.storeModel(ctx, in, t)
}

// learned is a model trained from a user's inputs, the number of its
// examples and the topics their marks moved (relevance.MarkedTopics: what
// the settings page says the marks did).
type learned struct {
	model    *relevance.Model
	examples int
	topics   []relevance.Topic
}

// train learns in's model.
func (s *Service) train(ctx context.Context, in *inputs) (learned, error) {
	g, err := s.texts.current(ctx)
	if err != nil {
		return learned{}, err
	}
	// The followed persons' newest papers, through the user's own follow
	// (so "not this person" leaves a paper out here as everywhere), each
	// person's share of maxOwn.
	var persons []follow.Expanded
	for _, f := range in.follows {
		if f.Kind == follow.Researcher {
			persons = append(persons, f)
		}
	}
	per := perPerson(len(persons))
	qs := make([]match.Query, 0, len(persons)+1)
	for i := range persons {
		t := persons[i].Target
		qs = append(qs, match.Query{UserID: in.userID, Only: &t, Limit: per})
	}
	// The user's flow: their newest matches, whatever follow matched.
	qs = append(qs, match.Query{UserID: in.userID, Limit: flowSize})
	results, err := s.matcher.MatchedMany(ctx, qs)
	if err != nil {
		return learned{}, err
	}
	flowResult := results[len(results)-1]
	results = results[:len(results)-1]
	have := map[int64]*paper.Paper{}
	var own []int64
	prof := relevance.Profile{Institutions: in.followedInstitute, Papers: in.followedArxivIDs}
	for i, r := range results {
		person := relevance.Person{Name: persons[i].OwnerName()}
		ids := personIDs(persons[i])
		for j := range r.Papers {
			p := &r.Papers[j]
			if _, dup := have[p.ID]; !dup && len(own) < maxOwn { // two followed persons' paper: once
				own = append(own, p.ID)
			}
			have[p.ID] = &p.Paper
			for _, a := range p.Authors {
				if slices.ContainsFunc(a.IDs, func(id string) bool { return slices.Contains(ids, id) }) &&
					a.Name != person.Name && !slices.Contains(person.OtherNames, a.Name) {
					person.OtherNames = append(person.OtherNames, a.Name)
				}
			}
		}
		if strings.Contains(person.Name, ":") && len(person.OtherNames) > 0 {
			// Nobody named the person: their name as their papers spell it.
			person.Name, person.OtherNames = person.OtherNames[0], person.OtherNames[1:]
		}
		prof.People = append(prof.People, person)
	}
	var flow []int64
	for j := range flowResult.Papers {
		p := &flowResult.Papers[j]
		if _, isOwn := have[p.ID]; !isOwn {
			have[p.ID] = &p.Paper
			flow = append(flow, p.ID)
		}
	}
	ids := slices.Concat(feedbackIDs(in.feedback), in.followedPaperIDs, own, flow)
	vecs, err := s.texts.vectors(ctx, g, ids, have, forTraining)
	if err != nil {
		return learned{}, err
	}
	// Newest first: the feedback, then the followed papers, then the
	// persons' papers, then the user's flow, then the background.
	var ex []relevance.Example
	add := func(id int64, src relevance.Source) {
		if v := vecs[id]; v != nil {
			ex = append(ex, relevance.Example{Vector: v, Source: src})
		}
	}
	for _, f := range in.feedback {
		switch f.value {
		case More:
			add(f.paperID, relevance.More)
		case Saved:
			add(f.paperID, relevance.Saved)
		case Less:
			add(f.paperID, relevance.Less)
		}
	}
	for _, id := range in.followedPaperIDs {
		add(id, relevance.Followed)
	}
	for _, id := range own {
		add(id, relevance.Own)
	}
	// The flow's papers that are no other example.
	taken := make(map[int64]bool, len(in.feedback)+len(in.followedPaperIDs))
	for _, f := range in.feedback {
		taken[f.paperID] = true
	}
	for _, id := range in.followedPaperIDs {
		taken[id] = true
	}
	for _, id := range flow {
		if !taken[id] {
			add(id, relevance.Flow)
		}
	}
	// The background is a sample of all papers: the user's own positives
	// in it are left out, not learned as negatives.
	positive := make(map[string]bool, len(ex))
	for _, e := range ex {
		if e.Source != relevance.Less {
			positive[e.Vector.Paper().ID] = true
		}
	}
	for _, v := range g.background {
		if !positive[v.Paper().ID] {
			ex = append(ex, relevance.Example{Vector: v, Source: relevance.Background})
		}
	}
	return learned{model: relevance.Train(s.params, prof, ex), examples: len(ex), topics: relevance.MarkedTopics(s.params, ex)}, nil
}

// perPerson is how many of each of n followed persons' newest papers a
// model learns from: ownPerPerson, or maxOwn shared out evenly when that
// would be more than maxOwn in all (at least one each; maxOwn still bounds
// the total). A user following 15 persons learns from 13 papers of each,
// not from the first 7 persons' 30 and none of the others': every person
// they follow is in their model, and a training reads some 220 papers,
// not 450 (the selection of those papers and the flow is the largest
// part of a feedback click's training: 20.9 ms before, 15.9 ms after, at
// scale S).
func perPerson(n int) int {
	if n*ownPerPerson <= maxOwn {
		return ownPerPerson
	}
	return max(maxOwn/n, 1)
}

// personIDs are the researcher ids of a followed person (every id the
// registry links to the followed one), as a paper's authors carry them.
func personIDs(f follow.Expanded) []string {
	ids := []string{f.ID}
	for _, k := range f.Keys {
		if id, ok := strings.CutPrefix(k, string(follow.Researcher)+":"); ok && id != f.ID {
			ids = append(ids, id)
		}
	}
	return ids
}

func feedbackIDs(rows []feedbackRow) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.paperID
	}
	return ids
}

// Models returns the stored models of users (a model a change made stale
// serves until its job retrains it), training and storing one for each
// user who has none yet: the cold start, from their follows alone.
func (s *Service) Models(ctx context.Context, userIDs []int64) (map[int64]*relevance.Model, error) {
	out := make(map[int64]*relevance.Model, len(userIDs))
	rows, err := s.db.Pool.Query(ctx, `SELECT user_id, model FROM ranking_models WHERE user_id = ANY($1) AND model IS NOT NULL`, userIDs)
	if err != nil {
		return nil, fmt.Errorf("reading the models of %d users: %w", len(userIDs), err)
	}
	for rows.Next() {
		var id int64
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			rows.Close()
			return nil, err
		}
		m := new(relevance.Model)
		if err := m.UnmarshalBinary(data); err != nil {
			// Another format (a new release) or damage: train anew.
			s.logger.InfoContext(ctx, "retraining a ranking model", "user_id", id, "reason", err.Error())
			continue
		}
		out[id] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the models of %d users: %w", len(userIDs), err)
	}
	for _, id := range userIDs {
		if out[id] != nil {
			continue
		}
		start := time.Now()
		in, err := s.inputs(ctx, id)
		if err != nil {
			return nil, err
		}
		t, err := s.train(ctx, in)
		if err != nil {
			return nil, err
		}
		if err := s.storeModel(ctx, in, t); err != nil {
			return nil, err
		}
		s.logger.DebugContext(ctx, "trained a first ranking model", "user_id", id, "examples", t.examples, "duration_ms", time.Since(start).Milliseconds())
		out[id] = t.model
	}
	return out, nil
}

// storeModel stores a model trained from in, with the topics its marks
// moved.
func (s *Service) storeModel(ctx context.Context, in *inputs, t learned) error {
	data, err := t.model.MarshalBinary()
	if err != nil {
		return fmt.Errorf("encoding the model of user %d: %w", in.userID, err)
	}
	topics := t.topics
	if topics == nil {
		topics = []relevance.Topic{} // '[]', not 'null': none moved
	}
	// A row created meanwhile (feedback) keeps its changes: this model saw
	// none of them (trained = in.changes, less than theirs), and its job
	// trains again.
	_, err = s.db.Pool.Exec(ctx, `
		INSERT INTO ranking_models AS m (user_id, changes, model, trained, examples, trained_at, topics)
		VALUES ($1, $2, $3, $2, $4, now(), $5)
		ON CONFLICT (user_id) DO UPDATE SET model = EXCLUDED.model, trained = EXCLUDED.trained,
			examples = EXCLUDED.examples, trained_at = EXCLUDED.trained_at, topics = EXCLUDED.topics
			WHERE m.trained < EXCLUDED.trained OR m.model IS NULL`, in.userID, in.changes, data, t.examples, topics)
	if database.IsUserGone(err) {
		return nil // the user was erased meanwhile: nothing to keep
	}
	if err != nil {
		return fmt.Errorf("storing the model of user %d: %w", in.userID, err)
	}
	return nil
}
