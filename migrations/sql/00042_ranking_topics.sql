-- ranking_models.topics (package ranking): the arXiv categories a user's
-- marks move, as the model's training found them (relevance.MarkedTopics:
-- category, the marks counted, the share reached, the weight), a JSON
-- array written with the model; the account page says them ("fewer papers
-- of cond-mat.mes-hall: you marked 5 less"). NULL for a model trained
-- before this column (until its next training, at the user's next mark or
-- follow change). Expand only: the previous release writes models without
-- it, which read as none.

-- +goose Up
ALTER TABLE ranking_models ADD COLUMN topics jsonb;

-- +goose Down
ALTER TABLE ranking_models DROP COLUMN topics;
