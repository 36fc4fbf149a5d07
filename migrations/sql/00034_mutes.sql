-- Mutes (issue #27, item 2; package mute): what a reader does not want to
-- see without unfollowing anything. One shape for every mute: what is
-- muted, as a match key (key), and an optional scope, the key of one of
-- the reader's follows (scope_key; NULL: every follow).
--
--   kind 'researcher': key researcher:<id>; a paper with any key of that
--       person (every id the identity registry links to it) is muted.
--   kind 'query': key query:<normal form of the search> (package search,
--       the saved-search syntax); a paper whose text the search matches.
--   kind 'category': key category:<id> or archive:<id>; a paper listed
--       there only as a cross-list (its primary category is elsewhere).
--
-- A scope is not a foreign key: a follow removed and made again finds its
-- mute again, and a mute whose follow is gone hides nothing (it takes out
-- a reason no paper has). Package match applies them for every surface.
-- The reader's own (ON DELETE CASCADE; mute.EraseUser erases them first).

-- +goose Up
CREATE TABLE mutes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('researcher', 'query', 'category')),
    key        text NOT NULL CHECK (length(key) <= 420),
    scope_key  text CHECK (length(scope_key) <= 420),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- One mute per (what, scope) and user; it also serves every read of a
    -- user's mutes (match reads them per rendered feed: user_id first).
    CONSTRAINT mutes_user_key_scope_key UNIQUE NULLS NOT DISTINCT (user_id, key, scope_key)
);

-- +goose Down
DROP TABLE mutes;
