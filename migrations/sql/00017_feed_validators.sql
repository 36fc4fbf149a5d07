-- Private feed validators from per-key high-water marks (issue #18): the
-- match job no longer bumps a user_feeds row per affected reader; a private
-- feed's ETag is (user_feeds.version, H), H the newest seq of the rows of
-- the reader's followed keys (feeds.Validators, match.Service.Head).
--
-- key_seq_times says when each write of key rows committed (paper.Store,
-- under keyWritersLock, in the transaction that advances
-- match_state.high_seq to to_seq), so that a feed's Last-Modified is when
-- its newest row H arrived: the first to_seq >= H (one probe of the
-- primary key). One small row per writing transaction. Written only by
-- package paper.
--
-- digest_schedules_instant_idx finds the readers who chose instant alerts,
-- the audience of the match job (notify.Digester.InstantAudience): the
-- match job joins only their follows with a batch's keys. frequency
-- rarely changes, so the index does not stop the alert's own updates
-- (instant_due_at) from being HOT.

-- +goose Up
CREATE TABLE key_seq_times (
    to_seq bigint PRIMARY KEY,
    at     timestamptz NOT NULL
);
-- Rows written before this migration: as of now (never later than the
-- truth is unknowable; now is at least not in the future).
INSERT INTO key_seq_times (to_seq, at) SELECT high_seq, now() FROM match_state WHERE high_seq > 0;
CREATE INDEX digest_schedules_instant_idx ON digest_schedules (user_id) WHERE frequency = 'instant';

-- +goose Down
DROP INDEX digest_schedules_instant_idx;
DROP TABLE key_seq_times;
