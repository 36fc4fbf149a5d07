-- The papers each channel was sent (so a filtered channel sends a paper
-- once however many of its follows match it, in whichever windows), and
-- the one-time pages that show a webhook's new signing secret on the
-- settings page. Both written only by package channels.

-- +goose Up
CREATE TABLE channel_papers (
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    paper_id   bigint NOT NULL REFERENCES papers (id) ON DELETE CASCADE,
    sent_at    timestamptz NOT NULL DEFAULT now(),
    -- Collect's probe of a window's candidates (channel_id, paper_id = ANY)
    -- and its insert of the ones it sends.
    PRIMARY KEY (channel_id, paper_id)
);

-- Prune: rows older than the retention, walked in time order.
CREATE INDEX channel_papers_sent_idx ON channel_papers (sent_at);

CREATE TABLE channel_reveals (
    -- The random nonce of the page's URL (/settings/channels/secret/{nonce}).
    nonce      text PRIMARY KEY,
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    -- true: the secret was rotated (the page says the old one still signs).
    rotated    boolean NOT NULL DEFAULT false,
    expires_at timestamptz NOT NULL
);

-- The hourly prune of reveals never opened.
CREATE INDEX channel_reveals_expires_idx ON channel_reveals (expires_at);

-- +goose Down
DROP TABLE channel_reveals;
DROP TABLE channel_papers;
