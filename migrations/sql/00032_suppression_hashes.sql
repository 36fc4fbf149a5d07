-- Suppressions kept only as a hash (issue #27, "their data theirs").
--
-- When a user is erased (account.Users.Erase) everything followfeed keeps
-- about them goes, except what stops mail going to an address that asked
-- for none: the suppression of their addresses stays, but only as
-- email_sha256 = sha256 of the lower-cased address (UTF-8), with email
-- NULL and no detail. The suppression check (account.SuppressedSQL,
-- account.UsersSuppressionsSQL) compares an address with both columns, so
-- a new user with that address is still suppressed, until its owner
-- confirms it (account.Addresses.Confirm removes both forms).
--
-- Why a plain hash and not a keyed one: the check runs inside SQL
-- statements (digests, instant alerts, channels' mails), which compute
-- sha256() themselves; a key from SECRET_KEY would have to travel with
-- every such statement, and a suppression would stop working the day
-- SECRET_KEY changes. A plain hash lets a holder of the database confirm
-- an address they already know, never list the addresses.
--
-- Expand only: the previous release reads and writes suppressions by
-- email alone (ON CONFLICT (email), s.email = lower(u.email)), which the
-- new unique constraint on email still serves; rows it writes have no
-- hash and keep working through the email column. Its processes do not
-- see the hash-only rows of users erased while they still run.

-- +goose Up
ALTER TABLE suppressions ADD COLUMN email_sha256 bytea
    CHECK (email_sha256 IS NULL OR length(email_sha256) = 32);
-- The email column loses its primary key (a hash-only row has none) but
-- stays unique: ON CONFLICT (email) of both releases infers this index.
ALTER TABLE suppressions ADD CONSTRAINT suppressions_email_key UNIQUE (email);
ALTER TABLE suppressions DROP CONSTRAINT suppressions_pkey;
ALTER TABLE suppressions ALTER COLUMN email DROP NOT NULL;
ALTER TABLE suppressions ADD CONSTRAINT suppressions_email_or_hash
    CHECK (email IS NOT NULL OR email_sha256 IS NOT NULL);
-- The suppression check's probe of the hash-only rows (one per address,
-- ON CONFLICT of account's eraser).
CREATE UNIQUE INDEX suppressions_email_sha256_idx ON suppressions (email_sha256) WHERE email IS NULL;

-- +goose Down
-- Hash-only rows cannot go back to an address: they are dropped.
DELETE FROM suppressions WHERE email IS NULL;
DROP INDEX suppressions_email_sha256_idx;
ALTER TABLE suppressions DROP CONSTRAINT suppressions_email_or_hash;
ALTER TABLE suppressions ALTER COLUMN email SET NOT NULL;
ALTER TABLE suppressions ADD PRIMARY KEY (email);
ALTER TABLE suppressions DROP CONSTRAINT suppressions_email_key;
ALTER TABLE suppressions DROP COLUMN email_sha256;
