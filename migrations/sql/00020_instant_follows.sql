-- The match job's audience by key (issue #18): instant_follows holds the
-- follows of the readers with instant delivery (instant alerts in
-- digest_schedules, or an enabled instant channel), keyed like
-- follows_key_idx, so the match job reads only the instant readers that
-- follow one of a batch's keys: its cost grows with the batch's keys and
-- their instant followers, not with every follower of a category nor with
-- every instant reader's follows.
--
-- Written only by the triggers below (no package writes it): a follow
-- inserted, changed or deleted (package follow) is mirrored when its reader
-- has instant delivery; a reader whose instant delivery starts or stops
-- (packages notify and channels) has their follows copied in or removed.
-- Read only by package match. It is a superset of the readers an alert
-- goes to: whether an alert is already waiting, the address confirmed or
-- suppressed, is checked by the hooks that schedule them.
--
-- instant_readers() lists the readers with instant delivery (through
-- digest_schedules_instant_idx and channels_instant_idx), so the match job
-- can tell whether the batch's categories already reached all of them.

-- +goose Up
CREATE TABLE instant_follows (
    key                  text NOT NULL,
    user_id              bigint NOT NULL,
    include_cross_lists  boolean NOT NULL,
    include_replacements boolean NOT NULL,
    PRIMARY KEY (key, user_id) INCLUDE (include_cross_lists, include_replacements)
);
-- A reader's rows, when their instant delivery stops.
CREATE INDEX instant_follows_user_idx ON instant_follows (user_id);

-- instant_delivery says whether a reader has instant alerts or an enabled
-- instant channel (digest_schedules' primary key, channels_instant_idx).
-- +goose StatementBegin
CREATE FUNCTION instant_delivery(uid bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM digest_schedules WHERE user_id = uid AND frequency = 'instant')
        OR EXISTS (SELECT 1 FROM channels WHERE user_id = uid AND mode = 'instant' AND enabled)
$$;
-- +goose StatementEnd

-- instant_readers is every reader for whom instant_delivery is true.
-- +goose StatementBegin
CREATE FUNCTION instant_readers() RETURNS SETOF bigint LANGUAGE sql STABLE AS $$
    SELECT user_id FROM digest_schedules WHERE frequency = 'instant'
    UNION
    SELECT user_id FROM channels WHERE mode = 'instant' AND enabled
$$;
-- +goose StatementEnd

-- instant_follows_resync brings the rows of the readers uids in line with
-- their follows and their instant delivery now. It first takes a KEY SHARE
-- lock on the readers, which waits for a follow being written (package
-- follow holds the reader FOR UPDATE while it writes one) to commit; the
-- statements after it (a volatile function: a snapshot each) then see that
-- follow. The other way round, a follow written while instant delivery
-- starts waits for that transaction's lock, and its trigger sees the
-- delivery. KEY SHARE does not conflict with plain updates of users.
-- +goose StatementBegin
CREATE FUNCTION instant_follows_resync(uids bigint[]) RETURNS void LANGUAGE sql AS $$
    SELECT 1 FROM users WHERE id = ANY (uids) ORDER BY id FOR KEY SHARE;
    DELETE FROM instant_follows WHERE user_id = ANY (uids) AND NOT instant_delivery(user_id);
    INSERT INTO instant_follows (key, user_id, include_cross_lists, include_replacements)
    SELECT f.key, f.user_id, f.include_cross_lists, f.include_replacements
    FROM follows f
    WHERE f.user_id IN (SELECT u FROM unnest(uids) AS u WHERE instant_delivery(u))
    ON CONFLICT (key, user_id) DO UPDATE SET include_cross_lists = EXCLUDED.include_cross_lists,
                                             include_replacements = EXCLUDED.include_replacements;
$$;
-- +goose StatementEnd

-- Follows: statement-level, so a bulk insert (an OPML import, the
-- benchmark's generator) costs one set-based statement, not a call per row.
-- +goose StatementBegin
CREATE FUNCTION instant_follows_on_follows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM instant_follows i USING old_rows o WHERE i.key = o.key AND i.user_id = o.user_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO instant_follows (key, user_id, include_cross_lists, include_replacements)
        SELECT n.key, n.user_id, n.include_cross_lists, n.include_replacements
        FROM new_rows n
        -- instant_delivery once per distinct reader, not per row.
        WHERE n.user_id IN (SELECT u FROM (SELECT DISTINCT user_id AS u FROM new_rows) d WHERE instant_delivery(u))
        ON CONFLICT (key, user_id) DO UPDATE SET include_cross_lists = EXCLUDED.include_cross_lists,
                                                 include_replacements = EXCLUDED.include_replacements;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER follows_instant_ins AFTER INSERT ON follows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_follows();
CREATE TRIGGER follows_instant_upd AFTER UPDATE ON follows
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_follows();
CREATE TRIGGER follows_instant_del AFTER DELETE ON follows
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_follows();

-- Digest schedules and channels: the readers whose instant delivery may
-- have started or stopped are resynced. Inserts and deletes are
-- statement-level (bulk-friendly); updates are row-level with a WHEN that
-- lets every other update (watermarks, due times: the match job's own) by
-- in C without a call.
-- +goose StatementBegin
CREATE FUNCTION instant_follows_on_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        PERFORM instant_follows_resync(ARRAY[OLD.user_id, NEW.user_id]);
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM instant_follows_resync(ARRAY(SELECT DISTINCT user_id FROM new_rows));
    ELSE
        PERFORM instant_follows_resync(ARRAY(SELECT DISTINCT user_id FROM old_rows));
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER digest_schedules_instant_ins AFTER INSERT ON digest_schedules
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_delivery();
CREATE TRIGGER digest_schedules_instant_del AFTER DELETE ON digest_schedules
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_delivery();
CREATE TRIGGER digest_schedules_instant_upd AFTER UPDATE ON digest_schedules FOR EACH ROW
    WHEN ((OLD.frequency = 'instant') IS DISTINCT FROM (NEW.frequency = 'instant') OR OLD.user_id <> NEW.user_id)
    EXECUTE FUNCTION instant_follows_on_delivery();
CREATE TRIGGER channels_instant_ins AFTER INSERT ON channels
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_delivery();
CREATE TRIGGER channels_instant_del AFTER DELETE ON channels
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION instant_follows_on_delivery();
CREATE TRIGGER channels_instant_upd AFTER UPDATE ON channels FOR EACH ROW
    WHEN ((OLD.mode = 'instant' AND OLD.enabled) IS DISTINCT FROM (NEW.mode = 'instant' AND NEW.enabled) OR OLD.user_id <> NEW.user_id)
    EXECUTE FUNCTION instant_follows_on_delivery();

-- The readers who have instant delivery now.
INSERT INTO instant_follows (key, user_id, include_cross_lists, include_replacements)
SELECT f.key, f.user_id, f.include_cross_lists, f.include_replacements
FROM follows f
WHERE f.user_id IN (SELECT instant_readers());
ANALYZE instant_follows;

-- +goose Down
DROP TRIGGER channels_instant_upd ON channels;
DROP TRIGGER channels_instant_del ON channels;
DROP TRIGGER channels_instant_ins ON channels;
DROP TRIGGER digest_schedules_instant_upd ON digest_schedules;
DROP TRIGGER digest_schedules_instant_del ON digest_schedules;
DROP TRIGGER digest_schedules_instant_ins ON digest_schedules;
DROP TRIGGER follows_instant_del ON follows;
DROP TRIGGER follows_instant_upd ON follows;
DROP TRIGGER follows_instant_ins ON follows;
DROP FUNCTION instant_follows_on_delivery();
DROP FUNCTION instant_follows_on_follows();
DROP FUNCTION instant_follows_resync(bigint[]);
DROP FUNCTION instant_readers();
DROP FUNCTION instant_delivery(bigint);
DROP TABLE instant_follows;
