-- Core tables of followfeed. Later migrations extend them; never edit a
-- migration that has shipped.

-- +goose Up

-- A person known from the host's identity provider, created the first time a
-- valid token with this `sub` is seen.
CREATE TABLE users (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sub                text NOT NULL UNIQUE CHECK (length(sub) BETWEEN 1 AND 255),
    email              text CHECK (length(email) <= 320),
    -- Set when the address is confirmed (double opt-in, or a token with
    -- email_verified=true). No digest goes to an unconfirmed address.
    email_confirmed_at timestamptz,
    timezone           text NOT NULL DEFAULT 'UTC',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- Per-user feed state, kept apart from users so that the match job's bulk
-- version bumps touch small rows (fillfactor leaves room for HOT updates).
CREATE TABLE user_feeds (
    user_id    bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    -- Bumped whenever what the user's feeds show may have changed (follows
    -- edited, new matches). ETag and Last-Modified derive from it, so a
    -- conditional GET is answered from this row alone.
    version    bigint NOT NULL DEFAULT 1,
    changed_at timestamptz NOT NULL DEFAULT now(),
    -- The private feed token is never stored: token_hash (SHA-256) finds the
    -- row, token_salt lets the server re-derive the token with SECRET_KEY to
    -- show it to its owner. Rotating replaces both.
    token_hash bytea UNIQUE,
    token_salt bytea
) WITH (fillfactor = 70);

-- A follow is a (user, match key) pair. `key` is what paper_keys rows carry
-- (category:cs.LG, archive:cs, researcher:openalex:A5023888391,
-- institution:ror:03dbr7087); kind/target are the normalised form people see.
CREATE TABLE follows (
    user_id              bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key                  text NOT NULL CHECK (length(key) <= 200),
    kind                 text NOT NULL CHECK (kind IN ('researcher', 'category', 'institution')),
    target               text NOT NULL,
    include_cross_lists  boolean NOT NULL DEFAULT true,
    include_replacements boolean NOT NULL DEFAULT false,
    label                text CHECK (length(label) <= 200),
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
-- Match job: batch keys -> followers. INCLUDE makes it an index-only scan.
CREATE INDEX follows_key_idx ON follows (key) INCLUDE (user_id, include_cross_lists, include_replacements);
-- GET /v1/me/follows: newest first, keyset-paginated on (created_at, key).
CREATE INDEX follows_user_created_idx ON follows (user_id, created_at DESC, key DESC);

-- Follower counts per key, maintained in the transaction that follows or
-- unfollows, so a profile page view costs one primary-key lookup.
CREATE TABLE follow_counts (
    key       text PRIMARY KEY,
    followers bigint NOT NULL CHECK (followers >= 0)
);

-- One row per arXiv paper (all versions collapse into it).
CREATE TABLE papers (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    arxiv_id         text NOT NULL UNIQUE,           -- without version: 2202.02326, astro-ph/9901001
    version          int NOT NULL CHECK (version >= 1),
    title            text NOT NULL,
    abstract         text NOT NULL DEFAULT '',
    authors          jsonb NOT NULL DEFAULT '[]',     -- [{"name": "...", "ids": ["openalex:A1", ...]}]
    primary_category text NOT NULL,
    categories       text[] NOT NULL,                 -- primary first, then cross-lists
    institutions     text[] NOT NULL DEFAULT '{}',
    doi              text,
    journal_ref      text,
    comments         text,
    submitted_at     timestamptz,
    updated_at       timestamptz,
    announced_at     timestamptz,
    abs_url          text NOT NULL,
    pdf_url          text NOT NULL,
    source           text NOT NULL CHECK (source IN ('oai', 'push')),
    deleted_at       timestamptz,                     -- OAI-PMH deleted record
    -- OpenAlex enrichment: when to look the paper up next (NULL: not needed,
    -- done, or given up) and how many lookups found nothing yet.
    enrich_after     timestamptz,
    enrich_attempts  int NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    modified_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX papers_enrich_idx ON papers (enrich_after) WHERE enrich_after IS NOT NULL;

-- The match keys of papers. A row is written when a key becomes known for a
-- paper (first harvest, later enrichment) and again, flagged `replacement`,
-- when a new version of the paper arrives. `seq` comes from paper_key_seq,
-- taken under an advisory lock so that seq order equals commit order (see
-- harvest.keyWritersLock).
CREATE SEQUENCE paper_key_seq AS bigint;
CREATE TABLE paper_keys (
    paper_id    bigint NOT NULL REFERENCES papers (id) ON DELETE CASCADE,
    key         text NOT NULL,
    version     int NOT NULL,          -- paper version whose arrival wrote the row
    cross_list  boolean NOT NULL,      -- category/archive known only from a cross-list
    replacement boolean NOT NULL,      -- written because a new version replaced the paper
    seq         bigint NOT NULL,
    PRIMARY KEY (paper_id, key, version)
);
-- Feeds: the newest N rows per followed key (LATERAL ... ORDER BY seq DESC LIMIT N).
CREATE INDEX paper_keys_key_seq_idx ON paper_keys (key, seq DESC) INCLUDE (paper_id, cross_list, replacement);
-- Match job and digests read a seq range. Rows are appended in seq order, so a
-- BRIN index answers range scans at a tiny fraction of a B-tree's size.
CREATE INDEX paper_keys_seq_brin ON paper_keys USING brin (seq);

-- The highest committed seq, written under the same advisory lock as the
-- keys: readers take their watermark here.
CREATE TABLE match_state (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    high_seq bigint NOT NULL DEFAULT 0
);
INSERT INTO match_state DEFAULT VALUES;

-- Progress of each harvest source (arXiv OAI-PMH per set), so a failed run
-- resumes where it stopped and a gap of days is caught up.
CREATE TABLE harvest_state (
    source            text PRIMARY KEY,     -- e.g. arxiv-oai:cs
    harvested_until   date,                 -- last datestamp fully harvested
    run_from          date,                 -- the run in progress, if any
    resumption_token  text,
    pages             int NOT NULL DEFAULT 0,
    records           bigint NOT NULL DEFAULT 0,
    last_error        text,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Delivery ledger: one row per (user, period) digest. The unique key makes a
-- second copy of the same digest impossible; state records its fate.
CREATE TABLE digests (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    period      text NOT NULL,         -- daily:2026-11-29, weekly:2026-W48, instant:...
    state       text NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'skipped')),
    from_seq    bigint NOT NULL,
    to_seq      bigint NOT NULL,
    email       text,
    message_id  text,
    papers      int NOT NULL DEFAULT 0,
    attempts    int NOT NULL DEFAULT 0,
    smtp_reply  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    UNIQUE (user_id, period)
);

-- +goose Down
DROP TABLE digests;
DROP TABLE harvest_state;
DROP TABLE match_state;
DROP TABLE paper_keys;
DROP SEQUENCE paper_key_seq;
DROP TABLE papers;
DROP TABLE follow_counts;
DROP TABLE follows;
DROP TABLE users;
