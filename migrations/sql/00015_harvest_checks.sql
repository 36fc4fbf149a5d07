-- The completeness check's worklist (issue #15): the days of an OAI-PMH set
-- still to be compared with the repository's own list (ListIdentifiers),
-- with the progress of the check under way, so that a check cut short by
-- its job's time budget, a timeout or a crash resumes at the page where it
-- stopped. A successful harvest run adds its days (in the transaction that
-- records the run); the harvest_check job of the set works them off and
-- deletes each day once its result is in harvest_days. Written only by
-- package harvest.

-- +goose Up
CREATE TABLE harvest_checks (
    source    text NOT NULL,                -- arxiv-oai:<set>
    day       date NOT NULL,                -- the datestamp checked
    -- list: listing the day's identifiers; reharvest: harvesting the day
    -- again because some were missing; relist: listing it once more to
    -- count what is still missing.
    phase     text NOT NULL DEFAULT 'list' CHECK (phase IN ('list', 'reharvest', 'relist')),
    token     text,                         -- resumption token of the phase's next page (NULL: its first)
    pages     int NOT NULL DEFAULT 0,       -- pages of the phase so far (a list that never ends is dropped)
    listed    int NOT NULL DEFAULT 0,       -- identifiers listed so far in this (re)listing
    missing   int NOT NULL DEFAULT 0,       -- of those, how many no stored paper has
    queued_at timestamptz NOT NULL DEFAULT now(),
    -- The check takes a set's days oldest first through this key.
    PRIMARY KEY (source, day)
);

-- +goose Down
DROP TABLE harvest_checks;
