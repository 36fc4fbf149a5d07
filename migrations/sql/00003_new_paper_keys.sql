-- Mark the key rows written when a paper was first stored. A window query
-- (digests) that meets such a row knows the paper is new in the window and
-- needs no look at earlier rows. Rows written before this migration keep
-- false: they take the slower, equally correct path.

-- +goose Up
ALTER TABLE paper_keys ADD COLUMN new_paper boolean NOT NULL DEFAULT false;
DROP INDEX paper_keys_key_seq_idx;
CREATE INDEX paper_keys_key_seq_idx ON paper_keys (key, seq DESC) INCLUDE (paper_id, cross_list, replacement, new_paper);

-- +goose Down
DROP INDEX paper_keys_key_seq_idx;
CREATE INDEX paper_keys_key_seq_idx ON paper_keys (key, seq DESC) INCLUDE (paper_id, cross_list, replacement);
ALTER TABLE paper_keys DROP COLUMN new_paper;
