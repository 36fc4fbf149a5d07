-- digests_instant_day_idx: a user's instant alerts by creation time, for
-- the count of what their alerts listed today against the day's budget
-- (00030; notify.alertsListedToday: one range of one user's rows, however
-- long their ledger).
--
-- Its own migration, apart from 00030's column: building it scans the
-- ledger under a lock that stops writes to digests but not reads, where
-- in the transaction that altered the table it stopped both. Written
-- before any release, it is safe to run on a database whose 00030 built
-- it (IF NOT EXISTS).

-- +goose Up
CREATE INDEX IF NOT EXISTS digests_instant_day_idx ON digests (user_id, created_at) WHERE kind = 'instant';

-- +goose Down
DROP INDEX digests_instant_day_idx;
