-- Source health (issue #15): every source's last success and last error,
-- an error count, and per announcement day the records held against the
-- repository's own count (the completeness check). harvest writes
-- harvest_state and harvest_days; the digest's skip preference is notify's.

-- +goose Up
-- harvest_state now has a row per source: arxiv-oai:<set>, openalex, push.
ALTER TABLE harvest_state
    ADD COLUMN last_success_at timestamptz,
    ADD COLUMN last_error_at   timestamptz,
    ADD COLUMN errors          bigint NOT NULL DEFAULT 0;

-- One row per (source, day): for an OAI-PMH set the records of that
-- datestamp this service holds (records) against what the repository lists
-- (expected, from ListIdentifiers; NULL until checked) and how many of those
-- were still missing after re-harvesting (missing); for openalex and push
-- the records enriched or pushed that UTC day. GET /v1/status reads the
-- newest days of each source through the primary key.
CREATE TABLE harvest_days (
    source     text NOT NULL,
    day        date NOT NULL,
    records    int NOT NULL DEFAULT 0,
    expected   int,
    missing    int,
    checked_at timestamptz,
    PRIMARY KEY (source, day)
);

-- A digest whose window holds no arXiv announcement (weekends, holidays)
-- is skipped unless the reader turns this off.
ALTER TABLE digest_schedules ADD COLUMN skip_no_announcement boolean NOT NULL DEFAULT true;

-- +goose Down
ALTER TABLE digest_schedules DROP COLUMN skip_no_announcement;
DROP TABLE harvest_days;
ALTER TABLE harvest_state DROP COLUMN errors, DROP COLUMN last_error_at, DROP COLUMN last_success_at;
