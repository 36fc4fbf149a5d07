-- Read state (issue #27, item 1; package inbox).
--
-- paper_states: what a reader did with a paper they were told about,
-- 'read' or 'done'; a paper with no row is unread. One row per reader and
-- paper, written only by package inbox (the inbox page, PUT
-- /v1/me/papers/{arxiv_id}/state, "mark all read", the opened-link
-- redirect). Every surface leaves a reader's read and done papers out of
-- what it sends (match/controls.go: digests, instant alerts, push
-- channels; feeds with ?unread=1), probing this table by its primary key
-- (user_id, paper_id). It is the reader's alone: the erasure deletes it
-- (inbox.EraseUser) and the export lists it. A paper's deletion takes its
-- rows with it.
--
-- paper_states_user_changed_idx: a reader's states newest first (the
-- export's and the inbox's reads of one reader's rows).
--
-- inbox_settings: a reader's "remember what I opened" (off by default:
-- no row, or false). When on, the paper links of their digests and
-- instant alerts go through a signed redirect (/open/{token}) that marks
-- the paper read before it sends the reader on to arXiv. Package inbox
-- writes it; erased and exported with the reader.
--
-- Expand only: the previous release neither reads nor writes them.

-- +goose Up
CREATE TABLE paper_states (
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    paper_id   bigint NOT NULL REFERENCES papers (id) ON DELETE CASCADE,
    state      text NOT NULL CHECK (state IN ('read', 'done')),
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, paper_id)
);
CREATE INDEX paper_states_user_changed_idx ON paper_states (user_id, changed_at DESC, paper_id DESC);

CREATE TABLE inbox_settings (
    user_id         bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    remember_opened boolean NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE inbox_settings;
DROP TABLE paper_states;
