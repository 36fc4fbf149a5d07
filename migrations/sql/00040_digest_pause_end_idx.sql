-- The scheduler finds the pauses that ended (00035) through this index.
-- Its own migration: building it holds a lock that stops writes to
-- digest_schedules (not reads) while it scans the table, which no other
-- migration's wait should prolong; every pause_ends_at is NULL when it is
-- made, so the index itself is empty.

-- +goose Up
CREATE INDEX IF NOT EXISTS digest_schedules_pause_end_idx ON digest_schedules (pause_ends_at) WHERE pause_ends_at IS NOT NULL;

-- +goose Down
DROP INDEX digest_schedules_pause_end_idx;
