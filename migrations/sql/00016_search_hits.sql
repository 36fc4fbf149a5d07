-- Saved-search matches, one row per (search, batch) instead of one
-- paper_keys row per (search, paper): at 100,000 followed searches a
-- 5,000-paper batch has some 400,000 matches, and a key row (two B-tree
-- entries and a foreign-key check) costs 20-30 µs to write, which is
-- seconds per batch; a reader's feed also had to read every paper's
-- query: rows, mostly other people's searches, to find its own reasons.
--
-- search_hits: the papers one ingest (or one backfill) found for a search
-- key ("query:<normal form>"), with one seq from paper_key_seq taken under
-- the writers' lock like key rows, so seq windows (match job, digests,
-- channels) and the watermark cover them. Its papers share the flags
-- paper_keys rows have: a batch writes up to three rows per search, one per
-- kind of match (new paper; a stored paper that newly matches; a new
-- version of one that matched before, replacement). Query matches are
-- never cross-lists.
--
-- paper_search_hits: per paper, the seqs of the search_hits rows that list
-- it, so that an ingest knows which searches a stored paper matched before
-- (new match or replacement) and a withdrawal can take the paper out of its
-- rows: one row per matched paper, instead of an index over the arrays (a
-- GIN index over 400,000 ids a batch costs a second and more). Deleting a
-- paper_search_hits row (a withdrawal, or the paper's deletion through the
-- foreign key) takes the paper out of the search_hits rows it lists, in the
-- trigger below; a row left without papers is deleted.

-- +goose Up
CREATE TABLE search_hits (
    key         text NOT NULL CHECK (key LIKE 'query:%'),
    seq         bigint NOT NULL,
    replacement boolean NOT NULL,
    new_paper   boolean NOT NULL,
    paper_ids   bigint[] NOT NULL CHECK (cardinality(paper_ids) > 0),
    -- Feeds, reasons and backfill: a search's rows, newest first.
    PRIMARY KEY (key, seq)
);
-- Match job (a seq range) and paper_search_hits' lookups (exact seqs). A
-- B-tree, not a BRIN like paper_keys': the lookups probe single seqs, and
-- seqs only grow, so entries are appended to the rightmost leaf.
CREATE UNIQUE INDEX search_hits_seq_idx ON search_hits (seq);

CREATE TABLE paper_search_hits (
    paper_id bigint PRIMARY KEY REFERENCES papers (id) ON DELETE CASCADE,
    seqs     bigint[] NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION search_hits_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- NOT IN (SELECT ...): a hashed subplan, one probe per listed id.
    DELETE FROM search_hits h
    WHERE h.seq IN (SELECT unnest(g.seqs) FROM gone g)
      AND NOT EXISTS (SELECT 1 FROM unnest(h.paper_ids) AS x WHERE x NOT IN (SELECT g.paper_id FROM gone g));
    UPDATE search_hits h
    SET paper_ids = ARRAY(SELECT x FROM unnest(h.paper_ids) AS x WHERE x NOT IN (SELECT g.paper_id FROM gone g) ORDER BY x)
    WHERE h.seq IN (SELECT unnest(g.seqs) FROM gone g);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER paper_search_hits_forget AFTER DELETE ON paper_search_hits
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION search_hits_forget();

-- The backfill's and preview's scan of the last 30 days (paper.recentSQL)
-- no longer probes paper_keys per paper, and without statistics on its
-- expression (ANALYZE keeps none for a partial index's) the planner takes
-- a third of all papers for the window and prefers a sequential scan and a
-- sort to papers_recent_idx.
CREATE STATISTICS papers_recent_stats ON (coalesce(announced_at, submitted_at, created_at)) FROM papers;
ANALYZE papers;

-- One row per (search, paper) match, as the query: key rows were: what
-- tests, benchmarks and an operator read; the product's statements read
-- the tables.
CREATE VIEW search_matches AS
SELECT h.key, h.seq, u.paper_id, h.replacement, h.new_paper
FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(paper_id);

-- Existing query: key rows move over, one hit row each (their seqs kept).
INSERT INTO search_hits (key, seq, replacement, new_paper, paper_ids)
SELECT key, seq, replacement, new_paper, ARRAY[paper_id] FROM paper_keys WHERE key >= 'query:' AND key < 'query;';
INSERT INTO paper_search_hits (paper_id, seqs)
SELECT paper_id, array_agg(seq ORDER BY seq) FROM paper_keys WHERE key >= 'query:' AND key < 'query;' GROUP BY paper_id;
DELETE FROM paper_keys WHERE key >= 'query:' AND key < 'query;';

-- +goose Down
INSERT INTO paper_keys (paper_id, key, version, cross_list, replacement, new_paper, seq)
SELECT DISTINCT ON (u.paper_id, h.key) u.paper_id, h.key, p.version, false, h.replacement, h.new_paper, h.seq
FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(paper_id) JOIN papers p ON p.id = u.paper_id
ORDER BY u.paper_id, h.key, h.seq DESC;
DROP VIEW search_matches;
DROP STATISTICS papers_recent_stats;
DROP TABLE paper_search_hits;
DROP FUNCTION search_hits_forget();
DROP TABLE search_hits;
