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

-- +goose Up
ALTER TABLE digest_schedules
    ADD COLUMN pause_from date,
    ADD COLUMN pause_until date,
    ADD COLUMN pause_starts_at timestamptz,
    ADD COLUMN pause_ends_at timestamptz,
    ADD COLUMN weekdays smallint NOT NULL DEFAULT 127 CHECK (weekdays BETWEEN 1 AND 127);
CREATE INDEX digest_schedules_pause_end_idx ON digest_schedules (pause_ends_at) WHERE pause_ends_at IS NOT NULL;

ALTER TABLE digests DROP CONSTRAINT digests_kind_check;
ALTER TABLE digests ADD CONSTRAINT digests_kind_check
    CHECK (kind IN ('daily', 'weekly', 'instant', 'manual', 'catchup'));

ALTER TABLE channels ADD COLUMN pause_catch_up boolean NOT NULL DEFAULT true;

ALTER TABLE follows
    ADD COLUMN snoozed_until date,
    ADD COLUMN snooze_ends_at timestamptz;

-- +goose Down
ALTER TABLE follows DROP COLUMN snooze_ends_at, DROP COLUMN snoozed_until;
ALTER TABLE channels DROP COLUMN pause_catch_up;
DELETE FROM digests WHERE kind = 'catchup';
ALTER TABLE digests DROP CONSTRAINT digests_kind_check;
ALTER TABLE digests ADD CONSTRAINT digests_kind_check
    CHECK (kind IN ('daily', 'weekly', 'instant', 'manual'));
DROP INDEX digest_schedules_pause_end_idx;
ALTER TABLE digest_schedules DROP COLUMN weekdays, DROP COLUMN pause_ends_at, DROP COLUMN pause_starts_at,
    DROP COLUMN pause_until, DROP COLUMN pause_from;
