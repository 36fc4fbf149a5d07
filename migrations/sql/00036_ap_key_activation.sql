-- ActivityPub key rotation without a window of disagreement (issue #29).
--
-- ap_keys.active_at: the instant a key becomes the signing key. Every
-- process reads ap_keys at most a minute apart (fediverse.keyReload), so a
-- rotation (`followfeed activitypub rotate-key`, a process of its own)
-- stores a new key whose active_at is two such minutes on: every process
-- has seen it before then, and every process serves and signs with the
-- newest key whose active_at has passed, so they all switch at that
-- instant. The key it replaces gets retired_at = the new key's active_at
-- (the instant it stops signing), so at most one key has no retired_at,
-- as before. A first key is active when created.
--
-- ap_deliveries.unauthorized: how many times the inbox answered that
-- delivery 401. A 401 is retried with back-off (the peer fetches the key
-- again when a signature fails) up to fediverse.UnauthorizedAttempts, then
-- the delivery fails.
--
-- Expand only: the previous release has no fediverse tables.

-- +goose Up
ALTER TABLE ap_keys ADD COLUMN active_at timestamptz NOT NULL DEFAULT now();
UPDATE ap_keys SET active_at = created_at;

ALTER TABLE ap_deliveries ADD COLUMN unauthorized smallint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE ap_deliveries DROP COLUMN unauthorized;
ALTER TABLE ap_keys DROP COLUMN active_at;
