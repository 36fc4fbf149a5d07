-- Best first, within the user's budget (issue #26).
--
-- feedback (package ranking): what a user said of a paper — "more like
-- this", "less like this", or saved — one value per user and paper, from a
-- signed link in a mail, a feed item or a push, the API or the settings
-- page. It is the user's alone: nothing public reads it, and it goes with
-- the user (ON DELETE CASCADE).
--
-- ranking_models (package ranking): each user's ranking model
-- (relevance.Model's binary encoding, which carries its format version),
-- retrained by a job after each change of the user's feedback or follows.
--
-- digest_schedules gains the budget (package notify): the order of a
-- digest's papers, the most it shows, and whether the papers of followed
-- persons and followed papers' events pass the budget. Expand only: the
-- previous release reads none of these and writes rows whose defaults
-- keep today's digests ('newest', no cap).

-- +goose Up
CREATE TABLE feedback (
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    paper_id   bigint NOT NULL REFERENCES papers (id) ON DELETE CASCADE,
    value      text NOT NULL CHECK (value IN ('more', 'less', 'saved')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, paper_id)
);
-- A user's feedback newest first (GET /v1/me/feedback's keyset pages, and
-- the newest examples training reads).
CREATE INDEX feedback_user_updated_idx ON feedback (user_id, updated_at DESC, paper_id DESC);

CREATE TABLE ranking_models (
    user_id    bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    -- Counts the changes of what the model learns from (the user's
    -- feedback and follows), each in the transaction of the change: a
    -- training whose snapshot saw changes = N learned from every change up
    -- to N.
    changes    bigint NOT NULL DEFAULT 0,
    -- The model (NULL until first trained) and the changes it learned from
    -- (-1: none yet); trained < changes means a retraining is due.
    model      bytea,
    trained    bigint NOT NULL DEFAULT -1,
    -- The examples it was trained on (positives and negatives).
    examples   int NOT NULL DEFAULT 0,
    trained_at timestamptz
);

-- New columns with constant defaults: no table rewrite. The checks are
-- NOT VALID (every existing row holds the default, which passes them), so
-- adding them scans nothing; new and updated rows are checked.
ALTER TABLE digest_schedules
    ADD COLUMN paper_order text NOT NULL DEFAULT 'newest',
    ADD COLUMN max_papers int NOT NULL DEFAULT 0,
    ADD COLUMN keep_followed boolean NOT NULL DEFAULT true;
ALTER TABLE digest_schedules
    ADD CONSTRAINT digest_schedules_paper_order_check CHECK (paper_order IN ('newest', 'best')) NOT VALID,
    ADD CONSTRAINT digest_schedules_max_papers_check CHECK (max_papers BETWEEN 0 AND 250) NOT VALID;

-- +goose Down
ALTER TABLE digest_schedules
    DROP CONSTRAINT digest_schedules_max_papers_check,
    DROP CONSTRAINT digest_schedules_paper_order_check,
    DROP COLUMN keep_followed,
    DROP COLUMN max_papers,
    DROP COLUMN paper_order;
DROP TABLE ranking_models;
DROP TABLE feedback;
