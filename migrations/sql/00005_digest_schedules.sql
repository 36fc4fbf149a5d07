-- Digest settings and schedule move out of users into their own table,
-- written only by notify (users, user_feeds and suppressions are account's).
-- A user without a row has the defaults: digests off, hour 7, Monday,
-- no empty digests, watermark 0, nothing due.

-- +goose Up
CREATE TABLE digest_schedules (
    user_id        bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    frequency      text NOT NULL DEFAULT 'off' CHECK (frequency IN ('off', 'instant', 'daily', 'weekly')),
    hour           smallint NOT NULL DEFAULT 7 CHECK (hour BETWEEN 0 AND 23),
    -- 0 = Sunday … 6 = Saturday (Go's time.Weekday).
    weekday        smallint NOT NULL DEFAULT 1 CHECK (weekday BETWEEN 0 AND 6),
    send_empty     boolean NOT NULL DEFAULT false,
    -- When the next daily/weekly digest is due (NULL: none scheduled).
    next_at        timestamptz,
    -- Papers with a match seq up to here have been accounted for by a
    -- digest (sent, skipped or failed): the next digest starts after it.
    watermark      bigint NOT NULL DEFAULT 0,
    -- When a waiting instant alert is due (NULL: none waiting). Matches
    -- while one waits join it, so a burst becomes one mail.
    instant_due_at timestamptz
-- The scheduler and every digest rewrite next_at, watermark or
-- instant_due_at; room on the page keeps those updates HOT.
) WITH (fillfactor = 70);

INSERT INTO digest_schedules (user_id, frequency, hour, weekday, send_empty, next_at, watermark, instant_due_at)
SELECT id, digest_frequency, digest_hour, digest_weekday, digest_send_empty, digest_next_at, digest_watermark, instant_due_at
FROM users;

-- The scheduler's scan: users whose digest time has come.
CREATE INDEX digest_schedules_due_idx ON digest_schedules (next_at) WHERE next_at IS NOT NULL;

DROP INDEX users_digest_due_idx;
ALTER TABLE users DROP COLUMN instant_due_at, DROP COLUMN digest_watermark, DROP COLUMN digest_next_at,
    DROP COLUMN digest_send_empty, DROP COLUMN digest_weekday, DROP COLUMN digest_hour, DROP COLUMN digest_frequency;

-- +goose Down
ALTER TABLE users
    ADD COLUMN digest_frequency text NOT NULL DEFAULT 'off'
        CHECK (digest_frequency IN ('off', 'instant', 'daily', 'weekly')),
    ADD COLUMN digest_hour smallint NOT NULL DEFAULT 7 CHECK (digest_hour BETWEEN 0 AND 23),
    ADD COLUMN digest_weekday smallint NOT NULL DEFAULT 1 CHECK (digest_weekday BETWEEN 0 AND 6),
    ADD COLUMN digest_send_empty boolean NOT NULL DEFAULT false,
    ADD COLUMN digest_next_at timestamptz,
    ADD COLUMN digest_watermark bigint NOT NULL DEFAULT 0,
    ADD COLUMN instant_due_at timestamptz;
UPDATE users u SET digest_frequency = s.frequency, digest_hour = s.hour, digest_weekday = s.weekday,
    digest_send_empty = s.send_empty, digest_next_at = s.next_at, digest_watermark = s.watermark,
    instant_due_at = s.instant_due_at
FROM digest_schedules s WHERE s.user_id = u.id;
CREATE INDEX users_digest_due_idx ON users (digest_next_at) WHERE digest_next_at IS NOT NULL;
DROP TABLE digest_schedules;
