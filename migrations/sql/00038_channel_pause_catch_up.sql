-- channels (package channels) gain pause_catch_up (00035's pause): after a
-- pause the channel sends what it missed as one batch (true, the default)
-- or skips it (false). A constant default: no rewrite of the table.
--
-- Expand only: the previous release neither reads nor writes it.

-- +goose Up
ALTER TABLE channels ADD COLUMN IF NOT EXISTS pause_catch_up boolean NOT NULL DEFAULT true;

-- +goose Down
ALTER TABLE channels DROP COLUMN pause_catch_up;
