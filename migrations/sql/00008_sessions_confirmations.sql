-- Revocable sessions and confirmation-mail caps (issue 15).

-- +goose Up
-- A settings session carries the user's session epoch when it was made;
-- logging out or revoking email links moves it on, so every earlier
-- session cookie stops working at once.
ALTER TABLE users ADD COLUMN session_epoch bigint NOT NULL DEFAULT 0;

-- One row per confirmation mail queued (a new or re-confirmed address),
-- written by account in the transaction that queues it. The caps per
-- reader and per recipient address count these rows, so they hold across
-- every api and worker process.
CREATE TABLE confirmation_requests (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- lower(address): the cap is on the recipient, whoever asks.
    email      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- The per-address count: rows of one address in the last day.
CREATE INDEX confirmation_requests_email_idx ON confirmation_requests (email, created_at);
-- The per-reader count: rows of one user in the last day.
CREATE INDEX confirmation_requests_user_idx ON confirmation_requests (user_id, created_at);

-- +goose Down
DROP TABLE confirmation_requests;
ALTER TABLE users DROP COLUMN session_epoch;
