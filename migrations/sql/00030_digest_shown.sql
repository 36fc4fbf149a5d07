-- Instant alerts within the reader's daily budget (issue #26).
--
-- digests (package notify) gains the papers a mail listed: papers counts
-- the window's papers, shown how many of them the mail lists. A best-first
-- instant alert counts what the user's alerts already listed today
-- against the day's budget (digest_schedules.max_papers). NULL on rows of
-- earlier releases, which listed at most 100 (notify.MaxPerDigest) of
-- their papers. Expand only: the previous release neither reads nor
-- writes it.
--
-- The index of that count, digests_instant_day_idx, is 00041's: built
-- here, in the transaction that altered the table, it held the lock that
-- stops every read of the ledger for as long as it scanned the ledger.

-- +goose Up
ALTER TABLE digests ADD COLUMN shown int;

-- +goose Down
ALTER TABLE digests DROP COLUMN shown;
