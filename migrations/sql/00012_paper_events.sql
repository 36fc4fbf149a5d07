-- Events of followed papers (kind paper) are key rows "paper:<arXiv id>"
-- written by package paper: a new version, a publication (a DOI or journal
-- reference appears), a withdrawal, and a new paper citing it. `event` says
-- which ('' for every ordinary key row; 'version', 'published', 'withdrawn',
-- 'cites'), `detail` what a reader is told (the changed arXiv comments, the
-- journal reference or DOI, the cited paper's title). Two events of the same
-- paper and version (a new version that also brings a journal reference)
-- are two rows, so the primary key gains `event`.
--
-- papers.openalex_id is the paper's OpenAlex work ("W2741809807"), written
-- when the paper is enriched: a newly enriched paper's referenced_works are
-- resolved to followed papers through it.

-- +goose Up
ALTER TABLE paper_keys ADD COLUMN event text NOT NULL DEFAULT '';
ALTER TABLE paper_keys ADD COLUMN detail text;
-- Built once over every key row (tens of seconds at scale S, 8M rows).
-- Serves what the old primary key served (ingest's key lookup by paper_id,
-- loadReasons' probe per paper) and match.fillEvents' (paper_id, key) probe.
CREATE UNIQUE INDEX paper_keys_pkey_event ON paper_keys (paper_id, key, version, event);
ALTER TABLE paper_keys DROP CONSTRAINT paper_keys_pkey;
ALTER TABLE paper_keys ADD CONSTRAINT paper_keys_pkey PRIMARY KEY USING INDEX paper_keys_pkey_event;

ALTER TABLE papers ADD COLUMN openalex_id text CHECK (length(openalex_id) <= 40);
-- Enrichment: the followed papers among a batch's referenced works.
CREATE INDEX papers_openalex_idx ON papers (openalex_id) WHERE openalex_id IS NOT NULL;

-- Saved-search backfill and preview (paper.scanRecent): the papers of the
-- last 30 days, newest first, as a range scan instead of a scan of every
-- paper (1M at scale S).
CREATE INDEX papers_recent_idx ON papers ((coalesce(announced_at, submitted_at, created_at)) DESC, id DESC)
    WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX papers_recent_idx;
DROP INDEX papers_openalex_idx;
ALTER TABLE papers DROP COLUMN openalex_id;
DELETE FROM paper_keys WHERE event <> '';
CREATE UNIQUE INDEX paper_keys_pkey_old ON paper_keys (paper_id, key, version);
ALTER TABLE paper_keys DROP CONSTRAINT paper_keys_pkey;
ALTER TABLE paper_keys ADD CONSTRAINT paper_keys_pkey PRIMARY KEY USING INDEX paper_keys_pkey_old;
ALTER TABLE paper_keys DROP COLUMN detail;
ALTER TABLE paper_keys DROP COLUMN event;
