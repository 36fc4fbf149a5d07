-- The names the host gave each id (issue #28): PUT /v1/researchers and
-- /v1/institutions set host_name on every key of a record that has a name
-- and add the record's other names to host_other_names (and set source to
-- 'host' on every key of a record, so an id the host put counts as
-- host-registered even when a paper linked it first). A split (DELETE
-- /v1/researchers/{id}/ids/{other}) gives the split-off identity its key's
-- host names back and takes them off the identity it leaves, so neither
-- side keeps the other's names. Written only by package identity. Keys
-- registered before this migration have none until the host puts their
-- record again.
--
-- An expand-only change: a nullable column and one with a constant
-- default, no rewrite; a binary of the previous release neither reads nor
-- writes them.

-- +goose Up
ALTER TABLE identity_keys ADD COLUMN host_name text CHECK (length(host_name) <= 300),
    ADD COLUMN host_other_names text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE identity_keys DROP COLUMN host_name, DROP COLUMN host_other_names;
