-- Retention (issue #28): the fediverse's housekeeping deletes daily
-- summaries (notes without a paper) older than
-- fediverse.SummaryRetention; this index finds them without reading the
-- per-paper notes, which stay as long as their papers. The other prunes
-- of tables that grow with time (key_seq_times, digests, harvest_days,
-- confirmation_requests, channel_*, ap_*) walk an existing index.

-- +goose Up
CREATE INDEX ap_notes_summary_idx ON ap_notes (published_at) WHERE paper_id IS NULL;

-- +goose Down
DROP INDEX ap_notes_summary_idx;
