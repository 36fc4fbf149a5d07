-- Email digests: preferences, schedule, watermarks, suppression.

-- +goose Up
ALTER TABLE users
    ADD COLUMN digest_frequency text NOT NULL DEFAULT 'off'
        CHECK (digest_frequency IN ('off', 'instant', 'daily', 'weekly')),
    ADD COLUMN digest_hour smallint NOT NULL DEFAULT 7 CHECK (digest_hour BETWEEN 0 AND 23),
    -- 0 = Sunday … 6 = Saturday (Go's time.Weekday).
    ADD COLUMN digest_weekday smallint NOT NULL DEFAULT 1 CHECK (digest_weekday BETWEEN 0 AND 6),
    ADD COLUMN digest_send_empty boolean NOT NULL DEFAULT false,
    -- When the next daily/weekly digest is due (NULL: none scheduled).
    ADD COLUMN digest_next_at timestamptz,
    -- Papers with a match seq up to here have been accounted for by a
    -- digest (sent, skipped or failed): the next digest starts after it.
    ADD COLUMN digest_watermark bigint NOT NULL DEFAULT 0,
    -- When a waiting instant alert is due (NULL: none waiting). Matches
    -- while one waits join it, so a burst becomes one mail.
    ADD COLUMN instant_due_at timestamptz,
    -- Signed email links (unsubscribe, manage, confirm) carry the epoch they
    -- were made in; bumping it revokes every link sent before.
    ADD COLUMN link_epoch int NOT NULL DEFAULT 1;

-- The scheduler's scan: users whose digest time has come.
CREATE INDEX users_digest_due_idx ON users (digest_next_at) WHERE digest_next_at IS NOT NULL;

-- Addresses that get nothing until their owner confirms them again.
CREATE TABLE suppressions (
    email      text PRIMARY KEY,            -- lower-cased
    reason     text NOT NULL CHECK (reason IN ('bounce', 'unsubscribe')),
    detail     text,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- 'unknown': the SMTP server may have accepted the message (connection lost
-- after the body, or the process died while sending); never resent.
ALTER TABLE digests DROP CONSTRAINT digests_state_check;
ALTER TABLE digests ADD CONSTRAINT digests_state_check
    CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'skipped', 'unknown'));
ALTER TABLE digests ADD COLUMN kind text NOT NULL DEFAULT 'daily'
    CHECK (kind IN ('daily', 'weekly', 'instant', 'manual'));
CREATE INDEX digests_user_created_idx ON digests (user_id, created_at DESC);
-- A digest's window (from_seq, to_seq] is reserved when its job first runs,
-- under the user's row lock, and the watermark moves past it at once: two
-- digests can never cover the same papers.
ALTER TABLE digests ALTER COLUMN from_seq DROP NOT NULL, ALTER COLUMN to_seq DROP NOT NULL;

-- +goose Down
UPDATE digests SET from_seq = coalesce(from_seq, 0), to_seq = coalesce(to_seq, 0);
ALTER TABLE digests ALTER COLUMN from_seq SET NOT NULL, ALTER COLUMN to_seq SET NOT NULL;
DROP INDEX digests_user_created_idx;
ALTER TABLE digests DROP COLUMN kind;
ALTER TABLE digests DROP CONSTRAINT digests_state_check;
ALTER TABLE digests ADD CONSTRAINT digests_state_check
    CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'skipped'));
DROP TABLE suppressions;
DROP INDEX users_digest_due_idx;
ALTER TABLE users DROP COLUMN link_epoch, DROP COLUMN instant_due_at, DROP COLUMN digest_watermark, DROP COLUMN digest_next_at,
    DROP COLUMN digest_send_empty, DROP COLUMN digest_weekday, DROP COLUMN digest_hour, DROP COLUMN digest_frequency;
