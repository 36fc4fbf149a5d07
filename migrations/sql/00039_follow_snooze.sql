-- follows (package follow) gain snoozed_until (the user's date) and
-- snooze_ends_at (its local midnight): until then the follow delivers
-- nothing by digest, alert or push; feeds keep it.
--
-- Expand only: the previous release neither reads nor writes them.

-- +goose Up
ALTER TABLE follows
    ADD COLUMN IF NOT EXISTS snoozed_until date,
    ADD COLUMN IF NOT EXISTS snooze_ends_at timestamptz;

-- +goose Down
ALTER TABLE follows DROP COLUMN snooze_ends_at, DROP COLUMN snoozed_until;
