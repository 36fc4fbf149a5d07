-- ActivityPub: an actor per followed public feed, its followers on other
-- servers, the notes it published, and the delivery ledger of its
-- activities (one row per activity and inbox). Every table is written only
-- by package fediverse.

-- +goose Up
-- The instance's signing keys (RSA, PKCS#1 / PKIX PEM): every actor's
-- publicKey is the current one; a rotation retires it and adds another.
CREATE TABLE ap_keys (
    id          serial PRIMARY KEY,
    public_pem  text NOT NULL,
    private_pem text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);
-- At most one current key.
CREATE UNIQUE INDEX ap_keys_current_idx ON ap_keys ((true)) WHERE retired_at IS NULL;

-- An actor that has (or had) followers. key is the follow key of the
-- public feed it speaks for (category:cs.LG, archive:cs,
-- researcher:orcid:…, institution:ror:…): its id URL is derived from it
-- and never changes, whatever the identity registry later calls canonical.
CREATE TABLE ap_actors (
    key         text PRIMARY KEY,
    -- Papers whose key rows have a seq up to here were turned into notes
    -- (or a summary): the fan-out's window is (watermark, high_seq].
    watermark   bigint NOT NULL,
    -- A fan-out is waiting (the match hook sets it; the fan-out clears it).
    due_at      timestamptz,
    -- Category actors without per-paper notes: when the last daily
    -- summary went out.
    summary_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
-- watermark and due_at change with every batch: room for HOT updates.
) WITH (fillfactor = 80);
-- The fan-out job: actors waiting for one.
CREATE INDEX ap_actors_due_idx ON ap_actors (due_at) WHERE due_at IS NOT NULL;

-- Where activities are POSTed: a server's shared inbox, or a follower's own
-- inbox when its server has none (and for Accepts).
CREATE TABLE ap_inboxes (
    id              bigserial PRIMARY KEY,
    url             text NOT NULL UNIQUE,
    host            text NOT NULL,
    -- A delivery job is queued or running (new deliveries join it).
    queued          boolean NOT NULL DEFAULT false,
    -- The first failure since the last success (NULL: healthy).
    failing_since   timestamptz,
    -- Set after DeadAfter of failures, or on 410 Gone: nothing more is sent.
    disabled_at     timestamptz,
    disabled_reason text NOT NULL DEFAULT '',
    last_status     int,
    last_response   text NOT NULL DEFAULT '',
    delivered_at    timestamptz
) WITH (fillfactor = 80);

CREATE TABLE ap_followers (
    actor_key   text NOT NULL REFERENCES ap_actors (key) ON DELETE CASCADE,
    -- The remote actor's id (its URL).
    follower    text NOT NULL,
    -- Where notes go (the shared inbox when it has one) and where the
    -- Accept went (its own inbox).
    inbox_id    bigint NOT NULL REFERENCES ap_inboxes (id),
    personal_id bigint NOT NULL REFERENCES ap_inboxes (id),
    -- The Follow activity's id: the Accept's object, an Undo's match.
    follow_id   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (actor_key, follower)
);
-- The fan-out: an actor's distinct delivery inboxes (index-only).
CREATE INDEX ap_followers_actor_inbox_idx ON ap_followers (actor_key, inbox_id);
-- Delete of a remote actor (all its follows), Undo through the shared inbox.
CREATE INDEX ap_followers_follower_idx ON ap_followers (follower);
-- 410 Gone from an inbox: its followers.
CREATE INDEX ap_followers_inbox_idx ON ap_followers (inbox_id);
CREATE INDEX ap_followers_personal_idx ON ap_followers (personal_id);

-- A note an actor published: one per paper and actor (a new version is an
-- Update of it, a withdrawal its Delete), or a category's daily summary
-- (paper_id NULL).
CREATE TABLE ap_notes (
    id           bigserial PRIMARY KEY,
    actor_key    text NOT NULL REFERENCES ap_actors (key) ON DELETE CASCADE,
    paper_id     bigint REFERENCES papers (id) ON DELETE SET NULL,
    version      int NOT NULL DEFAULT 1,
    -- The Note as served at its id (JSON).
    object       text NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now(),
    deleted_at   timestamptz
);
-- At most one note per paper per actor (the fan-out's ON CONFLICT).
CREATE UNIQUE INDEX ap_notes_actor_paper_idx ON ap_notes (actor_key, paper_id) WHERE paper_id IS NOT NULL;
-- Withdrawals: the live notes of recent papers.
CREATE INDEX ap_notes_live_idx ON ap_notes (published_at) WHERE deleted_at IS NULL AND paper_id IS NOT NULL;

-- Every activity sent: Create, Update and Delete of notes (the outbox) and
-- Accepts of Follows. body is the exact JSON POSTed on every attempt, so a
-- retry carries the same activity id.
CREATE TABLE ap_activities (
    id         bigserial PRIMARY KEY,
    actor_key  text NOT NULL REFERENCES ap_actors (key) ON DELETE CASCADE,
    type       text NOT NULL CHECK (type IN ('Create', 'Update', 'Delete', 'Accept')),
    note_id    bigint REFERENCES ap_notes (id) ON DELETE CASCADE,
    body       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- The outbox, newest first, in pages (Accepts are not in it).
CREATE INDEX ap_activities_outbox_idx ON ap_activities (actor_key, id DESC) WHERE type <> 'Accept';

-- The delivery ledger: one row per activity and inbox. At least once: a
-- row stays pending until the inbox answered 2xx.
CREATE TABLE ap_deliveries (
    inbox_id      bigint NOT NULL REFERENCES ap_inboxes (id) ON DELETE CASCADE,
    activity_id   bigint NOT NULL REFERENCES ap_activities (id) ON DELETE CASCADE,
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      int NOT NULL DEFAULT 0,
    last_status   int,
    last_response text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (inbox_id, activity_id)
);
-- A delivery job's queue: its inbox's pending rows, oldest first.
CREATE INDEX ap_deliveries_pending_idx ON ap_deliveries (inbox_id, activity_id) WHERE state = 'pending';
-- The prune of old final rows.
CREATE INDEX ap_deliveries_updated_idx ON ap_deliveries (updated_at) WHERE state <> 'pending';

-- Public keys of remote actors, fetched from a signature's keyId (through
-- the SSRF-safe client) and cached.
CREATE TABLE ap_remote_keys (
    key_id       text PRIMARY KEY,
    owner        text NOT NULL,
    public_pem   text NOT NULL,
    inbox        text NOT NULL DEFAULT '',
    shared_inbox text NOT NULL DEFAULT '',
    fetched_at   timestamptz NOT NULL
);

-- Signatures already accepted (SHA-256 of the Signature header), kept
-- while their Date is acceptable: the same signature again is a replay.
CREATE TABLE ap_seen_signatures (
    hash    bytea PRIMARY KEY,
    seen_at timestamptz NOT NULL
);
CREATE INDEX ap_seen_signatures_seen_idx ON ap_seen_signatures (seen_at);

-- +goose Down
DROP TABLE ap_seen_signatures;
DROP TABLE ap_remote_keys;
DROP TABLE ap_deliveries;
DROP TABLE ap_activities;
DROP TABLE ap_notes;
DROP TABLE ap_followers;
DROP TABLE ap_inboxes;
DROP TABLE ap_actors;
DROP TABLE ap_keys;
