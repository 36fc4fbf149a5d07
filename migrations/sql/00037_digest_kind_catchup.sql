-- The catch-up digest after a pause (00035): digests.kind 'catchup'.
--
-- The check is made NOT VALID and then validated, each in its own
-- transaction (NO TRANSACTION: goose runs each statement on its own): a
-- check added valid scans the whole ledger under the ACCESS EXCLUSIVE lock
-- that stops every digest's read and write; NOT VALID holds it only to
-- change the catalog, and VALIDATE scans under a lock that lets reads and
-- writes go on. Run again after a failed attempt (or on a database where
-- 00035 added it whole), it ends the same.
--
-- Expand only: the previous release writes none of the new kind.

-- +goose NO TRANSACTION
-- +goose Up
ALTER TABLE digests DROP CONSTRAINT IF EXISTS digests_kind_check,
    ADD CONSTRAINT digests_kind_check CHECK (kind IN ('daily', 'weekly', 'instant', 'manual', 'catchup')) NOT VALID;
ALTER TABLE digests VALIDATE CONSTRAINT digests_kind_check;

-- +goose Down
DELETE FROM digests WHERE kind = 'catchup';
ALTER TABLE digests DROP CONSTRAINT IF EXISTS digests_kind_check,
    ADD CONSTRAINT digests_kind_check CHECK (kind IN ('daily', 'weekly', 'instant', 'manual')) NOT VALID;
ALTER TABLE digests VALIDATE CONSTRAINT digests_kind_check;
