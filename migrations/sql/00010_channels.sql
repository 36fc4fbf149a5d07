-- Push delivery channels (webhooks, Slack, Discord, Matrix), their events
-- (the delivery ledger, one row per channel and event) and the attempts of
-- each delivery. All three tables are written only by package channels.

-- +goose Up
CREATE TABLE channels (
    id               bigserial PRIMARY KEY,
    user_id          bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type             text NOT NULL CHECK (type IN ('webhook', 'slack', 'discord', 'matrix')),
    -- The target: the webhook URL, or the Matrix homeserver's base URL.
    url              text NOT NULL,
    -- Matrix only: the room and the access token of the posting account.
    room_id          text NOT NULL DEFAULT '',
    access_token     text NOT NULL DEFAULT '',
    mode             text NOT NULL CHECK (mode IN ('instant', 'daily', 'weekly')),
    -- Follow keys this channel carries ("category:cs.LG"); NULL: all follows.
    follows          text[],
    -- Standard Webhooks signing secret (whsec_…), and the previous one,
    -- which signs alongside until old_secret_until after a rotation.
    secret           text NOT NULL DEFAULT '',
    old_secret       text NOT NULL DEFAULT '',
    old_secret_until timestamptz,
    enabled          boolean NOT NULL DEFAULT true,
    disabled_reason  text NOT NULL DEFAULT '',
    -- The first failed attempt since the last success (NULL: healthy).
    failing_since    timestamptz,
    -- Papers with a match seq up to here have been put into events.
    watermark        bigint NOT NULL DEFAULT 0,
    -- daily/weekly: when the next window closes. instant: NULL.
    next_at          timestamptz,
    -- instant: a collect job is waiting (matches meanwhile join it).
    due_at           timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
-- watermark, due_at and failing_since change on every delivery; room on
-- the page keeps those updates HOT.
) WITH (fillfactor = 80);

-- The owner's list (GET /v1/me/channels) and the per-reader limit count.
CREATE INDEX channels_user_idx ON channels (user_id, id);
-- The match job's hook: a batch's affected readers → their instant channels.
CREATE INDEX channels_instant_idx ON channels (user_id) WHERE mode = 'instant' AND enabled;
-- The periodic scheduler: daily/weekly channels whose window has closed.
CREATE INDEX channels_next_idx ON channels (next_at) WHERE next_at IS NOT NULL AND enabled;

CREATE TABLE channel_events (
    id            bigserial PRIMARY KEY,
    channel_id    bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    -- The webhook-id header (and Matrix transaction id): the same on every
    -- attempt, so receivers deduplicate.
    webhook_id    text NOT NULL UNIQUE,
    type          text NOT NULL CHECK (type IN ('papers.matched', 'channel.test')),
    -- The exact JSON body a webhook receives; chat messages are rendered
    -- from it, so every attempt sends the same content.
    body          text NOT NULL,
    papers        int NOT NULL,
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      int NOT NULL DEFAULT 0,
    -- Chat messages of a split event already posted (a retry skips them).
    parts_done    int NOT NULL DEFAULT 0,
    last_status   int,
    last_response text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    delivered_at  timestamptz
);

-- A channel's events, newest first (deliveries list, pruning).
CREATE INDEX channel_events_channel_idx ON channel_events (channel_id, id);

CREATE TABLE channel_attempts (
    id          bigserial PRIMARY KEY,
    channel_id  bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    event_id    bigint NOT NULL REFERENCES channel_events (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    -- The HTTP status; NULL when no response came (network error, refused address).
    status      int,
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'retry', 'failed')),
    -- The start of the response body, or the error.
    response    text NOT NULL DEFAULT '',
    duration_ms int NOT NULL DEFAULT 0
);

-- GET /v1/me/channels/{id}/deliveries: the last 100 attempts of a channel
-- (a backward index range scan), and the pruning of older ones.
CREATE INDEX channel_attempts_channel_idx ON channel_attempts (channel_id, id);
CREATE INDEX channel_attempts_event_idx ON channel_attempts (event_id);

-- +goose Down
DROP TABLE channel_attempts;
DROP TABLE channel_events;
DROP TABLE channels;
