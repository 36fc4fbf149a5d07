-- The reader in control (issue #27): vacation (pause) with one catch-up,
-- quiet days, snooze of one follow.
--
-- digest_schedules (package notify) gains the pause: pause_from and
-- pause_until are the dates the reader chose (their time zone;
-- pause_until NULL: "until I'm back"), pause_starts_at and pause_ends_at
-- the instants they stand for (local midnight of pause_from; the reader's
-- digest hour on pause_until), recomputed by every settings change.
-- While now is in [pause_starts_at, pause_ends_at) no digest, instant
-- alert or push delivery goes out. The scheduler finds pauses that ended
-- through digest_schedules_pause_end_idx, queues the one catch-up digest
-- (digests.kind 'catchup') and clears the four columns.
-- weekdays are the days a daily digest goes out: bit d set for Go's
-- time.Weekday d (Sunday = bit 0); 127 = every day.
--
-- channels (package channels) gain pause_catch_up: after a pause the
-- channel sends what it missed as one batch (true, the default) or skips
-- it (false).
--
-- follows (package follow) gain snoozed_until (the reader's date) and
-- snooze_ends_at (its local midnight): until then the follow delivers
-- nothing by digest, alert or push; feeds keep it.
--
-- Expand only: the previous release neither reads nor writes them.
--
-- One table per migration: this one alters digest_schedules, 00037 the
-- digests' kinds, 00038 channels, 00039 follows, 00040 makes the pause's
-- index. A rolling upgrade migrates while the previous release serves,
-- and each migration waits for its table's lock at most lock_timeout
-- (migrations.lockTimeout) before it is rolled back and tried again: as
-- one transaction over the four tables (how this migration was first
-- written) it had to find all four free at once, holding the first while
-- it waited for the next, and under the soak's full load it gave up after
-- 60 attempts. Written before any release, the four later ones are safe
-- to run on a database that ran this one whole (IF NOT EXISTS; the kinds'
-- check made again).

-- +goose Up
ALTER TABLE digest_schedules
    ADD COLUMN pause_from date,
    ADD COLUMN pause_until date,
    ADD COLUMN pause_starts_at timestamptz,
    ADD COLUMN pause_ends_at timestamptz,
    ADD COLUMN weekdays smallint NOT NULL DEFAULT 127 CHECK (weekdays BETWEEN 1 AND 127);

-- +goose Down
ALTER TABLE digest_schedules DROP COLUMN weekdays, DROP COLUMN pause_ends_at, DROP COLUMN pause_starts_at,
    DROP COLUMN pause_until, DROP COLUMN pause_from;
