-- Follows of interests: saved searches (kind query, key "query:<normal
-- form>", up to 400 characters) and single papers (kind paper, key
-- "paper:<arXiv id>"). Papers matched by a search get "query:" key rows at
-- ingest; paper events are "paper:" key rows (see docs/ARCHITECTURE.md).

-- +goose Up
ALTER TABLE follows DROP CONSTRAINT follows_kind_check;
ALTER TABLE follows ADD CONSTRAINT follows_kind_check
    CHECK (kind IN ('researcher', 'category', 'institution', 'query', 'paper'));
ALTER TABLE follows DROP CONSTRAINT follows_key_check;
ALTER TABLE follows ADD CONSTRAINT follows_key_check CHECK (length(key) <= 420);

-- +goose Down
DELETE FROM follow_counts WHERE key LIKE 'query:%' OR key LIKE 'paper:%';
DELETE FROM paper_keys WHERE key LIKE 'query:%' OR key LIKE 'paper:%';
DELETE FROM follows WHERE kind IN ('query', 'paper');
ALTER TABLE follows DROP CONSTRAINT follows_key_check;
ALTER TABLE follows ADD CONSTRAINT follows_key_check CHECK (length(key) <= 200);
ALTER TABLE follows DROP CONSTRAINT follows_kind_check;
ALTER TABLE follows ADD CONSTRAINT follows_kind_check CHECK (kind IN ('researcher', 'category', 'institution'));
