-- Digests not yet final, by last change: the scheduler's sweep finds rows
-- whose send job is gone (discarded or cancelled without its last attempt)
-- without reading the whole ledger, which only grows.

-- +goose Up
CREATE INDEX digests_open_idx ON digests (updated_at) WHERE state IN ('pending', 'sending');

-- +goose Down
DROP INDEX digests_open_idx;
