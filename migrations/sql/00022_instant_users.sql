-- instant_users() is instant_readers() under the code base's one name for
-- the person (a user; docs/ARCHITECTURE.md, Names). Expand first: this
-- release's match job calls instant_users(); the previous release's calls
-- instant_readers(), which stays until a later release drops it (contract),
-- once no process of the previous release runs.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION instant_users() RETURNS SETOF bigint LANGUAGE sql STABLE AS $$
    SELECT user_id FROM digest_schedules WHERE frequency = 'instant'
    UNION
    SELECT user_id FROM channels WHERE mode = 'instant' AND enabled
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION instant_users();
