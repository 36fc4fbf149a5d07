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
-- digests_instant_day_idx: a user's instant alerts by creation time, for
-- that count (one range of one user's rows, however long their ledger).

-- +goose Up
ALTER TABLE digests ADD COLUMN shown int;
CREATE INDEX digests_instant_day_idx ON digests (user_id, created_at) WHERE kind = 'instant';

-- +goose Down
DROP INDEX digests_instant_day_idx;
ALTER TABLE digests DROP COLUMN shown;
