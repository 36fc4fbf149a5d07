-- Chat webhook URLs out of the channels' text columns (issue #28): a Slack
-- or Discord URL is the credential (package channels seals it in
-- channels.url), but a failed delivery's error used to carry the whole URL
-- into channel_attempts.response, channel_events.last_response and
-- channels.disabled_reason. Package channels now redacts that text where
-- it is made and again when it reads it; this removes what older releases
-- stored, keeping the scheme and host (what the masked form shows). A
-- data change only: old binaries read the rows as before.

-- +goose Up
UPDATE channel_attempts
SET response = regexp_replace(response,
    '(https?://)(hooks\.slack\.com|(ptb\.|canary\.)?discord(app)?\.com)(:[0-9]+)?/[^[:space:]"''<>]*', '\1\2/…', 'gi')
WHERE response ~* '(hooks\.slack\.com|discord(app)?\.com)(:[0-9]+)?/';

UPDATE channel_events
SET last_response = regexp_replace(last_response,
    '(https?://)(hooks\.slack\.com|(ptb\.|canary\.)?discord(app)?\.com)(:[0-9]+)?/[^[:space:]"''<>]*', '\1\2/…', 'gi')
WHERE last_response ~* '(hooks\.slack\.com|discord(app)?\.com)(:[0-9]+)?/';

UPDATE channels
SET disabled_reason = regexp_replace(disabled_reason,
    '(https?://)(hooks\.slack\.com|(ptb\.|canary\.)?discord(app)?\.com)(:[0-9]+)?/[^[:space:]"''<>]*', '\1\2/…', 'gi')
WHERE disabled_reason ~* '(hooks\.slack\.com|discord(app)?\.com)(:[0-9]+)?/';

-- +goose Down
-- What was removed is not restored.
SELECT 1;
