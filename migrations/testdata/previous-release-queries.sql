-- The previous release's SQL, held against the current schema by migrations' TestPreviousReleaseQueries.
-- release: f5f6b2db4f46bf35d448c552e50ef90f1b9bfedf
-- schema: 20
-- migrations: sha256:b91d8b7a31b99aa70dd1422aec8a4a459dd0976e30142d9c51a730b1e29f8033 (16 migrations)
-- captured: 2026-12-04 by `make soak` (`followfeed-lab soak --out RELIABILITY.md --tests var/soak-tests.json --only rolling-upgrade --capture-queries migrations/testdata/previous-release-queries.sql`)
-- statements: 134 (112 followfeed, 2 goose, 20 river)
-- What: every distinct statement the release's api and worker processes sent in the soak's rolling-upgrade scenario before the
-- upgrade began (PostgreSQL's jsonlog with log_statement=all; $n placeholders as sent, values not logged), River's own included;
-- session commands (BEGIN, SET, LISTEN, ...) left out. A re-capture of the same release adds to the statements already here.
-- Re-capture (at each release, after updating migrations.PreviousRelease): make soak SOAK_FLAGS="--only rolling-upgrade --capture-queries migrations/testdata/previous-release-queries.sql"

-- statement 1: followfeed, worker
DELETE FROM channel_events WHERE id IN (
				SELECT id FROM channel_events
				WHERE state <> 'pending' AND updated_at < $1
				ORDER BY id LIMIT $2)

-- statement 2: followfeed, worker
DELETE FROM channel_papers WHERE sent_at < $1

-- statement 3: followfeed, worker
DELETE FROM channel_reveals WHERE expires_at < $1

-- statement 4: followfeed, api
DELETE FROM follows WHERE user_id = $1 AND key = $2

-- statement 5: followfeed, worker
DELETE FROM harvest_checks WHERE source = $1 AND day < $2

-- statement 6: followfeed, worker
DELETE FROM harvest_checks WHERE source = $1 AND day = $2

-- statement 7: followfeed, api
DELETE FROM identity_splits s USING identity_keys a, identity_keys b
			WHERE s.key = ANY($1) AND a.key = s.key AND b.key = s.other_key AND a.identity_id = b.identity_id

-- statement 8: followfeed, worker
INSERT INTO channel_events (channel_id, webhook_id, type, body, papers) VALUES ($1, $2, $3, $4, $5)
		RETURNING id

-- statement 9: followfeed, worker
INSERT INTO channel_papers (channel_id, paper_id, sent_at) SELECT $1, unnest($2::bigint[]), $3
			ON CONFLICT DO NOTHING

-- statement 10: followfeed, api
INSERT INTO channels (user_id, type, url, room_id, access_token, mode, follows, secret, next_at, watermark)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, (SELECT high_seq FROM match_state))
			RETURNING id

-- statement 11: followfeed, worker
INSERT INTO digest_schedules (user_id) SELECT DISTINCT user_id FROM digests WHERE id = ANY($1)
			ON CONFLICT (user_id) DO NOTHING

-- statement 12: followfeed, api
INSERT INTO digest_schedules AS d (user_id, frequency, hour, weekday, send_empty, next_at, watermark, skip_no_announcement)
			VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN (SELECT high_seq FROM match_state) ELSE 0 END, $8)
			ON CONFLICT (user_id) DO UPDATE SET
				frequency = $2, hour = $3, weekday = $4, send_empty = $5, next_at = $6, skip_no_announcement = $8,
				watermark = CASE WHEN $7 THEN (SELECT high_seq FROM match_state) ELSE d.watermark END

-- statement 13: followfeed, worker
INSERT INTO digests (user_id, period, kind, created_at)
			SELECT u, p, k, $4 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS n(u, p, k)
			ON CONFLICT (user_id, period) DO NOTHING
			RETURNING id

-- statement 14: followfeed, api
INSERT INTO follow_counts (key, followers) VALUES ($1, 1)
				ON CONFLICT (key) DO UPDATE SET followers = follow_counts.followers + 1

-- statement 15: followfeed, api
INSERT INTO follows (user_id, key, kind, target, include_cross_lists, include_replacements, label)
		VALUES ($1, $2, $3, $4, coalesce($5, true), coalesce($6, false), nullif($7, ''))
		ON CONFLICT (user_id, key) DO UPDATE SET
			include_cross_lists  = coalesce($5, follows.include_cross_lists),
			include_replacements = coalesce($6, follows.include_replacements),
			label                = CASE WHEN $7::text IS NULL THEN follows.label ELSE nullif($7, '') END
		RETURNING include_cross_lists, include_replacements, label, created_at, (xmax = 0),
			coalesce((SELECT i.name FROM identity_keys ik JOIN identities i ON i.id = ik.identity_id WHERE ik.key = follows.key), '')

-- statement 16: followfeed, worker
INSERT INTO harvest_checks (source, day)
		SELECT $1, d::date FROM generate_series($2::date, $3::date, interval '1 day') AS d
		UNION
		SELECT source, day FROM harvest_days WHERE source = $1 AND day >= $4 AND day < $2 AND missing > 0
		ON CONFLICT (source, day) DO NOTHING

-- statement 17: followfeed, api
INSERT INTO harvest_days (source, day, records) VALUES ($1, $2, $3)
			ON CONFLICT (source, day) DO UPDATE SET records = harvest_days.records + $3

-- statement 18: followfeed, worker
INSERT INTO harvest_days (source, day, records, expected, missing, checked_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, day) DO UPDATE SET records = $3, expected = $4, missing = $5, checked_at = $6

-- statement 19: followfeed, worker
INSERT INTO harvest_state (source, harvested_until, run_from, resumption_token, pages, records, last_error, last_success_at, updated_at)
			VALUES ($1, $2, NULL, NULL, 1, $3, NULL, $4, now())
			ON CONFLICT (source) DO UPDATE SET harvested_until = $2, run_from = NULL, resumption_token = NULL,
				pages = harvest_state.pages + 1, records = harvest_state.records + $3, last_error = NULL,
				last_success_at = $4, updated_at = now()

-- statement 20: followfeed, api worker
INSERT INTO harvest_state (source, last_success_at, last_error, updated_at) VALUES ($1, $2, NULL, now())
			ON CONFLICT (source) DO UPDATE SET last_success_at = $2, last_error = NULL, updated_at = now()

-- statement 21: followfeed, api
INSERT INTO identities (id, kind, name, name_source, other_names, country)
		SELECT id, kind, nullif(name, ''), nullif(src, ''), ARRAY(SELECT jsonb_array_elements_text(others::jsonb)), nullif(country, '')
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[])
		     AS t(id, kind, name, src, others, country, fresh)
		WHERE fresh

-- statement 22: followfeed, api
INSERT INTO identity_keys (key, identity_id, source)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])

-- statement 23: followfeed, api worker
INSERT INTO papers (arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		                    doi, journal_ref, comments, submitted_at, updated_at, announced_at, abs_url, pdf_url, source, enrich_after)
		SELECT arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		       doi, journal_ref, comments, submitted_at, updated_at, announced_at, abs_url, pdf_url, source, enrich_after
		FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, arxiv_id text, version int, title text, abstract text, authors jsonb,
	primary_category text, categories text[], institutions text[], doi text, journal_ref text, comments text,
	submitted_at timestamptz, updated_at timestamptz, announced_at timestamptz, abs_url text, pdf_url text, source text,
	enrich_after timestamptz)
		ON CONFLICT (arxiv_id) DO NOTHING
		RETURNING id, arxiv_id

-- statement 24: followfeed, worker
SELECT 1

-- statement 25: followfeed, api
SELECT 1 FROM users WHERE id = $1 FOR UPDATE

-- statement 26: followfeed, worker
SELECT DISTINCT f.target FROM follows f
		WHERE f.key >= 'researcher:openalex:A' AND f.key < 'researcher:openalex:B' AND f.key LIKE 'researcher:openalex:A%'
		  AND NOT EXISTS (SELECT 1 FROM identity_keys k WHERE k.key = f.key)
		LIMIT $1

-- statement 27: followfeed, api
SELECT DISTINCT identity_id FROM identity_keys WHERE key = ANY($1)

-- statement 28: followfeed, worker
SELECT DISTINCT u.id FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(id)
		WHERE h.key = $1 ORDER BY 1

-- statement 29: followfeed, api
SELECT DISTINCT user_id FROM follows WHERE key = ANY($1)

-- statement 30: followfeed, api worker
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)

-- statement 31: followfeed, worker
SELECT arxiv_id FROM papers
		WHERE enrich_after <= $1 AND deleted_at IS NULL
		ORDER BY enrich_after LIMIT $2

-- statement 32: followfeed, worker
SELECT channel_id, webhook_id, type, body, state, parts_done FROM channel_events WHERE id = $1

-- statement 33: followfeed, api
SELECT coalesce((SELECT i.name FROM identity_keys k JOIN identities i ON i.id = k.identity_id WHERE k.key = $1), '')

-- statement 34: followfeed, api
SELECT coalesce(email, '') FROM users WHERE id = $1

-- statement 35: followfeed, api
SELECT coalesce(i.name, ''), i.other_names, coalesce(i.country, ''),
		       ARRAY(SELECT k2.key FROM identity_keys k2 WHERE k2.identity_id = i.id ORDER BY k2.key)
		FROM identity_keys k JOIN identities i ON i.id = k.identity_id
		WHERE k.key = $1

-- statement 36: followfeed, api
SELECT coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL, coalesce(s.reason, ''), u.timezone,
	coalesce(d.frequency, 'off'), coalesce(d.hour, 7), coalesce(d.weekday, 1), coalesce(d.send_empty, false),
	coalesce(d.next_at, 'epoch'), coalesce(d.skip_no_announcement, true) FROM users u LEFT JOIN suppressions s ON s.email = lower(u.email)
	LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1

-- statement 37: followfeed, api
SELECT coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL, coalesce(s.reason, ''), u.timezone,
	coalesce(d.frequency, 'off'), coalesce(d.hour, 7), coalesce(d.weekday, 1), coalesce(d.send_empty, false),
	coalesce(d.next_at, 'epoch'), coalesce(d.skip_no_announcement, true) FROM users u LEFT JOIN suppressions s ON s.email = lower(u.email)
	LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1 FOR UPDATE OF u

-- statement 38: followfeed, api
SELECT count(*) FROM channels WHERE user_id = $1

-- statement 39: followfeed, api
SELECT count(*), coalesce(bool_or(key = $2), false) FROM follows WHERE user_id = $1

-- statement 40: followfeed, worker
SELECT d.user_id, u.timezone, d.frequency, d.hour, d.weekday, d.next_at
			FROM digest_schedules d JOIN users u ON u.id = d.user_id
			WHERE d.next_at <= $1
			ORDER BY d.next_at LIMIT $2
			FOR UPDATE OF d, u SKIP LOCKED

-- statement 41: followfeed, worker
SELECT day, phase, coalesce(token, ''), pages, listed, missing FROM harvest_checks
		WHERE source = $1 ORDER BY day LIMIT 1

-- statement 42: followfeed, api
SELECT e.webhook_id, e.type, e.state, e.papers, a.at, a.status, a.outcome, a.response, a.duration_ms
		FROM channel_attempts a JOIN channel_events e ON e.id = a.event_id
		WHERE a.channel_id = $1 ORDER BY a.id DESC LIMIT 100

-- statement 43: followfeed, worker
SELECT f.user_id,
	       bool_or(b.primary_new OR (f.include_replacements AND b.primary_replaced)
	               OR (f.include_cross_lists AND (b.cross_new OR (f.include_replacements AND b.cross_replaced)))) AS matched
	FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::bool[])
	     AS b(key, primary_new, primary_replaced, cross_new, cross_replaced)
	JOIN instant_follows f ON f.key = b.key
	WHERE (b.primary_new OR b.primary_replaced OR (f.include_cross_lists AND (b.cross_new OR b.cross_replaced)))
	  AND ($6::bigint[] IS NULL OR f.user_id = ANY ($6))
	GROUP BY f.user_id

-- statement 44: followfeed, worker
SELECT f.user_id, f.key, f.include_cross_lists, f.include_replacements, coalesce(f.label, ''), f.created_at,
	       coalesce(i.name, ''),
	       CASE WHEN k1.identity_id IS NOT NULL THEN ARRAY(SELECT k2.key FROM identity_keys k2 WHERE k2.identity_id = k1.identity_id) END
	FROM follows f
	LEFT JOIN identity_keys k1 ON k1.key = f.key
	LEFT JOIN identities i ON i.id = k1.identity_id
	WHERE f.user_id = ANY($1)
	ORDER BY f.user_id, f.created_at DESC, f.key DESC

-- statement 45: followfeed, api
SELECT f.user_id, f.version, f.changed_at, m.high_seq
		FROM user_feeds f, match_state m WHERE f.token_hash = $1

-- statement 46: followfeed, worker
SELECT followers FROM follow_counts WHERE key = $1 FOR SHARE

-- statement 47: followfeed, worker
SELECT g.id, g.user_id, g.period, g.kind, g.state, g.from_seq, g.to_seq, g.attempts,
			       coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL,
			       EXISTS (SELECT 1 FROM suppressions s WHERE s.email = lower(u.email)),
			       u.timezone, d.frequency, d.send_empty, d.skip_no_announcement, u.link_epoch
			FROM digests g JOIN users u ON u.id = g.user_id JOIN digest_schedules d ON d.user_id = g.user_id
			WHERE g.id = ANY($1)
			ORDER BY g.id
			FOR UPDATE OF g, u, d

-- statement 48: followfeed, worker
SELECT harvested_until, run_from, resumption_token, last_success_at FROM harvest_state WHERE source = $1

-- statement 49: followfeed, worker
SELECT high_seq FROM match_state

-- statement 50: followfeed, worker
SELECT i.id FROM unnest($1::text[]) WITH ORDINALITY AS i(id, n)
		WHERE NOT EXISTS (SELECT 1 FROM papers p WHERE p.arxiv_id = i.id)
		ORDER BY i.n

-- statement 51: followfeed, api
SELECT id FROM users WHERE id = $1 FOR UPDATE

-- statement 52: followfeed, api worker
SELECT id, arxiv_id, version, title, CASE WHEN $2 THEN '' ELSE abstract END, authors, primary_category, categories, institutions,
		       coalesce(doi, ''), coalesce(journal_ref, ''), coalesce(comments, ''),
		       coalesce(submitted_at, created_at), coalesce(updated_at, submitted_at, created_at),
		       coalesce(announced_at, created_at), abs_url, pdf_url
		FROM papers WHERE id = ANY($1)

-- statement 53: followfeed, api worker
SELECT id, arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		       coalesce(doi, ''), coalesce(journal_ref, ''), coalesce(comments, ''),
		       coalesce(submitted_at, 'epoch'), coalesce(updated_at, 'epoch'), coalesce(announced_at, 'epoch'),
		       abs_url, pdf_url, deleted_at IS NOT NULL
		FROM papers WHERE arxiv_id = ANY($1)
		ORDER BY arxiv_id
		FOR UPDATE

-- statement 54: followfeed, api
SELECT id, sub, coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone, created_at, session_epoch FROM users WHERE sub = $1

-- statement 55: followfeed, worker
SELECT id, user_id, mode FROM channels
				WHERE next_at <= $1 AND next_at IS NOT NULL AND enabled
				ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED

-- statement 56: followfeed, worker
SELECT id, user_id, type, url, room_id, access_token, mode, follows, secret, old_secret,
	coalesce(old_secret_until, 'epoch'), enabled, disabled_reason, coalesce(failing_since, 'epoch'), created_at FROM channels WHERE id = $1

-- statement 57: followfeed, api
SELECT id, user_id, type, url, room_id, access_token, mode, follows, secret, old_secret,
	coalesce(old_secret_until, 'epoch'), enabled, disabled_reason, coalesce(failing_since, 'epoch'), created_at FROM channels WHERE id = $1 AND user_id = $2

-- statement 58: followfeed, api
SELECT id, user_id, type, url, room_id, access_token, mode, follows, secret, old_secret,
	coalesce(old_secret_until, 'epoch'), enabled, disabled_reason, coalesce(failing_since, 'epoch'), created_at FROM channels WHERE user_id = $1 ORDER BY id

-- statement 59: followfeed, api worker
SELECT id, user_id, type, url, secret, old_secret, access_token FROM channels
			WHERE (secret <> '' AND left(secret, 5) <> $1) OR (old_secret <> '' AND left(old_secret, 5) <> $1)
			   OR (access_token <> '' AND left(access_token, 5) <> $1)
			   OR (type IN ('slack', 'discord') AND left(url, 5) <> $1)
			FOR UPDATE SKIP LOCKED

-- statement 60: followfeed, worker
SELECT instant_readers()

-- statement 61: followfeed, worker
SELECT k.i::int, h.paper_id, h.seq, false, h.replacement, h.new_paper
	FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
	CROSS JOIN LATERAL (
		SELECT u.paper_id, h.seq, h.replacement, h.new_paper
		FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) WITH ORDINALITY AS u(paper_id, o)
		WHERE h.key = k.key AND h.seq > $2 AND h.seq <= $3
		ORDER BY h.seq DESC, u.o LIMIT $4
	) h

-- statement 62: followfeed, worker
SELECT k.i::int, pk.paper_id, pk.seq, pk.cross_list, pk.replacement, pk.new_paper
	FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
	CROSS JOIN LATERAL (
		SELECT pk.paper_id, pk.seq, pk.cross_list, pk.replacement, pk.new_paper FROM paper_keys pk
		WHERE pk.key = k.key AND pk.seq > $2 AND pk.seq <= $3
		ORDER BY pk.seq DESC LIMIT $4
	) pk

-- statement 63: followfeed, api
SELECT key, include_cross_lists, include_replacements, coalesce(label, ''), created_at,
	coalesce((SELECT i.name FROM identity_keys ik JOIN identities i ON i.id = ik.identity_id WHERE ik.key = follows.key), '') FROM follows
		WHERE user_id = $1 AND ($2::text = '' OR (created_at, key) < ($3, $2))
		ORDER BY created_at DESC, key DESC
		LIMIT $4

-- statement 64: followfeed, api worker
SELECT key, include_cross_lists, include_replacements, coalesce(label, ''), created_at,
	coalesce((SELECT i.name FROM identity_keys ik JOIN identities i ON i.id = ik.identity_id WHERE ik.key = follows.key), '') FROM follows WHERE user_id = $1 ORDER BY created_at DESC, key DESC

-- statement 65: followfeed, api
SELECT kind, state::text, count(*) FROM river.river_job GROUP BY 1, 2

-- statement 66: followfeed, api
SELECT nextval(pg_get_serial_sequence('identities', 'id')) FROM generate_series(1, $1)

-- statement 67: followfeed, api worker
SELECT p.id, p.arxiv_id, p.version, p.title, p.abstract, p.authors, p.primary_category, p.categories,
	       p.abs_url, coalesce(p.announced_at, p.submitted_at, p.created_at)
	FROM papers p
	WHERE coalesce(p.announced_at, p.submitted_at, p.created_at) >= $1 AND p.deleted_at IS NULL
	ORDER BY coalesce(p.announced_at, p.submitted_at, p.created_at) DESC, p.id DESC

-- statement 68: followfeed, worker
SELECT paper_id FROM channel_papers WHERE channel_id = $1 AND paper_id = ANY($2)

-- statement 69: followfeed, api worker
SELECT pg_advisory_xact_lock($1)

-- statement 70: followfeed, api
SELECT pk.paper_id, pk.seq
			FROM (SELECT $1::text AS key
			      UNION
			      SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			      WHERE k1.key = $1) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq FROM paper_keys pk
				WHERE pk.key = ks.key AND NOT pk.replacement
				ORDER BY pk.seq DESC LIMIT $2
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 4

-- statement 71: followfeed, api worker
SELECT s.source, d.day, d.records, coalesce(d.expected, -1), coalesce(d.missing, -1), d.checked_at
		FROM unnest($1::text[]) AS s(source)
		CROSS JOIN LATERAL (SELECT * FROM harvest_days d WHERE d.source = s.source ORDER BY d.day DESC LIMIT $2) d

-- statement 72: followfeed, api worker
SELECT setval('paper_key_seq', nextval('paper_key_seq') + $1 - 1)

-- statement 73: followfeed, api worker
SELECT source, last_success_at, coalesce(last_error, ''), last_error_at, errors, harvested_until
		FROM harvest_state WHERE source = ANY($1)

-- statement 74: followfeed, api worker
SELECT substr(key, 7) FROM follow_counts
		WHERE key >= 'query:' AND key < 'query;' AND followers > 0

-- statement 75: followfeed, api
SELECT token_salt FROM user_feeds WHERE user_id = $1

-- statement 76: followfeed, api
SELECT true FROM channels WHERE id = $1 AND user_id = $2

-- statement 77: followfeed, worker
SELECT user_id FROM follows WHERE key = $1 ORDER BY user_id

-- statement 78: followfeed, worker
SELECT user_id, follow_key, paper_id FROM identity_disputes WHERE user_id = ANY($1)

-- statement 79: followfeed, worker
SELECT user_id, token_salt FROM user_feeds WHERE user_id = ANY($1) AND token_salt IS NOT NULL

-- statement 80: followfeed, worker
SELECT w.n, (SELECT max(g.created_at) FROM digests g
		             WHERE g.user_id = w.user_id AND (w.id = 0 OR g.id < w.id) AND g.kind <> 'instant')
		FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS w(user_id, id, n)

-- statement 81: followfeed, worker
UPDATE channel_events SET attempts = attempts + 1, parts_done = $2, last_status = $3, last_response = $4,
					state = CASE WHEN $5 THEN 'delivered' ELSE state END,
					delivered_at = CASE WHEN $5 THEN $6::timestamptz END, updated_at = $6
				WHERE id = $1

-- statement 82: followfeed, worker
UPDATE channels SET due_at = $2
		WHERE user_id = ANY($1) AND mode = 'instant' AND enabled AND due_at IS NULL
		RETURNING id

-- statement 83: followfeed, worker
UPDATE channels SET due_at = NULL WHERE id = $1
			RETURNING user_id, enabled, follows, watermark

-- statement 84: followfeed, worker
UPDATE channels SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL

-- statement 85: followfeed, worker
UPDATE channels SET watermark = $2 WHERE id = $1

-- statement 86: followfeed, worker
UPDATE digest_schedules d SET instant_due_at = $2
		FROM users u
		WHERE d.user_id = ANY($1) AND u.id = d.user_id AND d.frequency = 'instant' AND d.instant_due_at IS NULL AND u.email_confirmed_at IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.email = lower(u.email))
		RETURNING d.user_id

-- statement 87: followfeed, worker
UPDATE digest_schedules d SET next_at = n.next
			FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, next) WHERE d.user_id = n.id

-- statement 88: followfeed, worker
UPDATE digests SET state = $2, smtp_reply = $3, updated_at = now(),
	sent_at = CASE WHEN $2 = 'sent' THEN now() END WHERE id = $1

-- statement 89: followfeed, worker
UPDATE digests SET
			state = CASE state WHEN $3 THEN $4 ELSE $5 END,
			smtp_reply = coalesce(smtp_reply || ' ', '') || CASE state
				WHEN $3 THEN '(abandoned while sending; not resent)'
				ELSE '(abandoned: no send attempt for 48 h)' END,
			updated_at = now()
		WHERE state IN ('pending', 'sending')
		  AND updated_at < now() - CASE state WHEN $3 THEN $1::interval ELSE $2::interval END

-- statement 90: followfeed, api
UPDATE follow_counts SET followers = followers - 1 WHERE key = $1

-- statement 91: followfeed, api
UPDATE identities i SET name = nullif(t.name, ''), name_source = nullif(t.src, ''),
			other_names = ARRAY(SELECT jsonb_array_elements_text(t.others::jsonb)), country = nullif(t.country, ''), updated_at = now()
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[]) AS t(id, name, src, others, country, fresh)
		WHERE i.id = t.id AND NOT t.fresh

-- statement 92: followfeed, api
UPDATE papers SET enrich_after = $2, enrich_attempts = 0
		WHERE arxiv_id = $1 AND openalex_id IS NULL AND enrich_after IS NULL AND deleted_at IS NULL

-- statement 93: followfeed, api
UPDATE user_feeds SET token_salt = $2, token_hash = $3
			WHERE user_id = $1 AND ($4 = false OR token_salt IS NULL)
			RETURNING token_salt

-- statement 94: followfeed, api
UPDATE user_feeds SET version = version + 1, changed_at = now() WHERE user_id = ANY($1)

-- statement 95: followfeed, api
UPDATE users SET
			email = nullif($2, ''),
			email_confirmed_at = CASE WHEN $3 THEN NULL ELSE email_confirmed_at END,
			link_epoch = link_epoch + CASE WHEN $3 THEN 1 ELSE 0 END,
			timezone = $4,
			updated_at = now()
		WHERE id = $1

-- statement 96: followfeed, worker
WITH b AS (
			SELECT * FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::bool[]) AS b(key, pn, pr, cn, cr)
		)
		SELECT coalesce(array_agg(key), '{}'), coalesce(array_agg(pn), '{}'), coalesce(array_agg(pr), '{}'),
		       coalesce(array_agg(cn), '{}'), coalesce(array_agg(cr), '{}')
		FROM (
			SELECT key, bool_or(pn) AS pn, bool_or(pr) AS pr, bool_or(cn) AS cn, bool_or(cr) AS cr
			FROM (
				SELECT key, pn, pr, cn, cr FROM b
				UNION ALL
				SELECT k2.key, b.pn, b.pr, b.cn, b.cr
				FROM b CROSS JOIN LATERAL (
					SELECT k1.identity_id FROM identity_keys k1
					WHERE k1.key = b.key AND (b.key LIKE 'researcher:%' OR b.key LIKE 'institution:%')
				) k1
				JOIN identity_keys k2 ON k2.identity_id = k1.identity_id AND k2.key <> b.key
			) e
			GROUP BY key ORDER BY key COLLATE "C"
		) x

-- statement 97: followfeed, api worker
WITH fo AS MATERIALIZED (
			SELECT f.key, f.created_at, f.include_cross_lists, k1.identity_id AS ident, coalesce(k2.key, f.key) AS mkey
			FROM follows f
			LEFT JOIN identity_keys k1 ON k1.key = f.key
			LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			WHERE f.user_id = $1
		), qh AS MATERIALIZED (
			SELECT DISTINCT u.id, h.key
			FROM fo JOIN search_hits h ON h.key = fo.key
			CROSS JOIN LATERAL unnest(h.paper_ids) AS u(id)
			WHERE fo.key >= 'query:' AND fo.key < 'query;' AND h.paper_ids && $2::bigint[] AND u.id = ANY($2)
		)
		SELECT id, key, followed FROM (
			SELECT DISTINCT ON (p.id, coalesce(fo.ident::text, fo.key)) p.id, fo.key, fo.created_at AS followed
			FROM unnest($2::bigint[]) AS p(id)
			CROSS JOIN LATERAL (
				(SELECT key, true AS rows FROM paper_keys WHERE paper_id = p.id OFFSET 0)
				UNION ALL
				SELECT key, false FROM qh WHERE qh.id = p.id
			) pk
			JOIN fo ON fo.mkey = pk.key
			WHERE (fo.include_cross_lists OR NOT pk.rows OR EXISTS (
				SELECT 1 FROM paper_keys c WHERE c.paper_id = p.id AND c.key = pk.key AND NOT c.cross_list))
			  AND NOT EXISTS (
				SELECT 1 FROM identity_disputes d
				WHERE d.user_id = $1 AND d.paper_id = p.id
				  AND (d.follow_key = fo.key OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = fo.ident)))
			ORDER BY p.id, coalesce(fo.ident::text, fo.key), fo.created_at, fo.key
		) r
		ORDER BY id, followed, key

-- statement 98: followfeed, worker
WITH ins AS (
				INSERT INTO channel_attempts (channel_id, event_id, at, status, outcome, response, duration_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7)
			)
			DELETE FROM channel_attempts WHERE channel_id = $1 AND id <= (
				SELECT id FROM channel_attempts WHERE channel_id = $1 ORDER BY id DESC OFFSET 99 LIMIT 1)

-- statement 99: followfeed, api
WITH ks AS (
			SELECT $1::text AS key
			UNION
			SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			WHERE k1.key = $1
		)
		SELECT coalesce((SELECT i.name FROM identity_keys k JOIN identities i ON i.id = k.identity_id WHERE k.key = $1), ''),
		       CASE WHEN (SELECT count(*) FROM ks) = 1
		            THEN coalesce((SELECT followers FROM follow_counts WHERE key = $1), 0)
		            ELSE (SELECT count(DISTINCT f.user_id) FROM follows f WHERE f.key IN (SELECT key FROM ks)) END,
		       EXISTS (SELECT 1 FROM follows f WHERE f.user_id = $2 AND f.key IN (SELECT key FROM ks))

-- statement 100: followfeed, api
WITH ks AS (
			SELECT $1::text AS key
			UNION
			SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id WHERE k1.key = $1
		), ident AS (
			SELECT i.updated_at FROM identity_keys k JOIN identities i ON i.id = k.identity_id WHERE k.key = $1
		), newest AS (
			SELECT pk.seq, p.modified_at
			FROM ks CROSS JOIN LATERAL (
				SELECT seq, paper_id FROM paper_keys pk WHERE pk.key = ks.key ORDER BY pk.seq DESC LIMIT 1) pk
			JOIN papers p ON p.id = pk.paper_id
			ORDER BY pk.seq DESC LIMIT 1
		)
		SELECT coalesce((SELECT seq FROM newest), 0)
		         + coalesce((SELECT (extract(epoch FROM updated_at) * 1000000)::bigint FROM ident), 0),
		       greatest((SELECT modified_at FROM newest), (SELECT updated_at FROM ident), 'epoch'::timestamptz)

-- statement 101: followfeed, api worker
WITH m AS (UPDATE match_state SET high_seq = $1 WHERE high_seq < $1)
		INSERT INTO key_seq_times (to_seq, at) VALUES ($1, clock_timestamp()) ON CONFLICT DO NOTHING

-- statement 102: followfeed, api
WITH q AS (
		SELECT u.*, EXISTS (SELECT 1 FROM identity_disputes d WHERE d.user_id = u.user_id) AS disputes
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::int[], $6::int[])
		WITH ORDINALITY AS u(user_id, only_key, after_seq, upto_seq, per_key, lim, ord)
	)
	SELECT q.ord, j.paper_id, j.seq, j.replaced, j.new_in_window, j.keys, j.ranks, j.total
	FROM q CROSS JOIN LATERAL (
		SELECT c.paper_id, c.seq, (c.seen IS NOT NULL OR NOT c.first_in_window) AS replaced,
		       c.new_in_window, c.keys, c.ranks, count(*) OVER () AS total
		FROM (SELECT c.*, CASE WHEN q.after_seq > 0 AND NOT c.new_in_window THEN (SELECT true FROM (
				(SELECT 1
				FROM paper_keys pk
				CROSS JOIN LATERAL (
					SELECT pk.key AS key
					UNION ALL
					SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
					WHERE k1.key = pk.key AND k2.key <> pk.key
				) x
				JOIN follows fo ON fo.user_id = q.user_id AND fo.key = x.key
				  AND (q.only_key = '' OR fo.key = q.only_key)
				WHERE q.after_seq > 0 AND NOT c.new_in_window AND pk.paper_id = c.paper_id
				  AND pk.seq <= q.after_seq AND NOT pk.replacement
				  AND (fo.include_cross_lists OR NOT pk.cross_list))
				UNION ALL
				(SELECT 1
				FROM follows fo JOIN search_hits h ON h.key = fo.key
				WHERE q.after_seq > 0 AND NOT c.new_in_window
				  AND fo.user_id = q.user_id AND fo.key >= 'query:' AND fo.key < 'query;'
				  AND (q.only_key = '' OR fo.key = q.only_key)
				  AND h.seq <= q.after_seq AND NOT h.replacement AND c.paper_id = ANY(h.paper_ids))
			) x
			LIMIT 1) END AS seen FROM (
			SELECT k.paper_id, max(k.seq) AS seq,
			       bool_or(NOT k.replacement) AS first_in_window,
			       bool_or(k.replacement) AS replaced_in_window,
			       bool_or(k.new_paper) AS new_in_window,
			       array_agg(fo.key) AS keys, array_agg(fo.rank) AS ranks
			FROM (
				SELECT DISTINCT ON (m.key) fo.key, fo.created_at, fo.include_cross_lists, fo.include_replacements,
				       m.key AS mkey, k1.identity_id AS ident,
				       dense_rank() OVER (ORDER BY fo.created_at, fo.key)::int AS rank
				FROM follows fo
				LEFT JOIN identity_keys k1 ON k1.key = fo.key
				LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
				CROSS JOIN LATERAL (SELECT coalesce(k2.key, fo.key) AS key) m
				WHERE fo.user_id = q.user_id AND (q.only_key = '' OR fo.key = q.only_key)
				ORDER BY m.key, fo.created_at, fo.key
			) fo CROSS JOIN LATERAL (
				(SELECT pk.paper_id, pk.seq, pk.replacement, pk.new_paper
				FROM paper_keys pk
				WHERE pk.key = fo.mkey AND pk.seq > q.after_seq AND pk.seq <= q.upto_seq
				  AND (fo.include_cross_lists OR NOT pk.cross_list)
				  AND (fo.include_replacements OR NOT pk.replacement)
				  AND (NOT q.disputes OR NOT EXISTS (
					SELECT 1 FROM identity_disputes d
					WHERE d.user_id = q.user_id AND d.paper_id = pk.paper_id
					  AND (d.follow_key = fo.key
					       OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = fo.ident))))
				ORDER BY pk.seq DESC
				LIMIT q.per_key)
				UNION ALL
				(SELECT u.paper_id, h.seq, h.replacement, h.new_paper
				FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(paper_id)
				WHERE fo.mkey >= 'query:' AND fo.mkey < 'query;'
				  AND h.key = fo.mkey AND h.seq > q.after_seq AND h.seq <= q.upto_seq
				  AND (fo.include_replacements OR NOT h.replacement)
				ORDER BY h.seq DESC
				LIMIT q.per_key)
			) k
			GROUP BY k.paper_id
		) c OFFSET 0) c
		WHERE c.seen IS NULL OR c.replaced_in_window
		ORDER BY c.seq DESC, c.paper_id DESC
		LIMIT q.lim
	) j
	ORDER BY q.ord, j.seq DESC, j.paper_id DESC

-- statement 103: followfeed, worker
WITH r AS MATERIALIZED (
			SELECT paper_id, key, cross_list, replacement FROM paper_keys WHERE seq BETWEEN $1 AND $2
		)
		SELECT coalesce(array_agg(key), '{}'), coalesce(array_agg(pn), '{}'), coalesce(array_agg(pr), '{}'),
		       coalesce(array_agg(cn), '{}'), coalesce(array_agg(cr), '{}'),
		       CASE WHEN EXISTS (SELECT 1 FROM identity_disputes) THEN ARRAY(SELECT DISTINCT paper_id FROM r) END
		FROM (
			SELECT key,
			       bool_or(NOT cross_list AND NOT replacement) AS pn, bool_or(NOT cross_list AND replacement) AS pr,
			       bool_or(cross_list AND NOT replacement) AS cn, bool_or(cross_list AND replacement) AS cr
			FROM (
				SELECT key, cross_list, replacement FROM r
				UNION ALL
				SELECT key, false, replacement FROM search_hits
				WHERE seq BETWEEN $1 AND $2
			) r
			GROUP BY key ORDER BY key COLLATE "C"
		) k

-- statement 104: followfeed, api
WITH u AS (
			INSERT INTO users (sub, email, email_confirmed_at) VALUES ($1, $2, $3)
			ON CONFLICT (sub) DO NOTHING
			RETURNING *
		), f AS (
			INSERT INTO user_feeds (user_id) SELECT id FROM u
		)
		SELECT id, sub, coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone, created_at, session_epoch FROM u

-- statement 105: followfeed, api
WITH u AS (
		SELECT f.user_id, f.version, f.changed_at, (SELECT high_seq FROM match_state) AS high_seq,
		       EXISTS (SELECT 1 FROM identity_disputes d WHERE d.user_id = f.user_id) AS disputes
		FROM user_feeds f WHERE f.user_id = $1
	), fo AS (
		SELECT DISTINCT ON (m.key) fo.key, fo.include_cross_lists, m.key AS mkey, k1.identity_id AS ident
		FROM follows fo
		LEFT JOIN identity_keys k1 ON k1.key = fo.key
		LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
		CROSS JOIN LATERAL (SELECT coalesce(k2.key, fo.key) AS key) m
		WHERE fo.user_id = $1
		ORDER BY m.key, fo.created_at, fo.key
	), heads AS (
		SELECT max(h.seq) AS seq
		FROM u CROSS JOIN fo CROSS JOIN LATERAL (
			(SELECT pk.seq FROM paper_keys pk
			WHERE pk.key = fo.mkey AND (fo.include_cross_lists OR NOT pk.cross_list)
			  AND (NOT u.disputes OR NOT EXISTS (
				SELECT 1 FROM identity_disputes d
				WHERE d.user_id = u.user_id AND d.paper_id = pk.paper_id
				  AND (d.follow_key = fo.key
				       OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = fo.ident))))
			ORDER BY pk.seq DESC LIMIT 1)
			UNION ALL
			(SELECT sh.seq FROM search_hits sh
			WHERE fo.mkey >= 'query:' AND fo.mkey < 'query;' AND sh.key = fo.mkey
			ORDER BY sh.seq DESC LIMIT 1)
		) h
	)
	SELECT u.version, u.changed_at, u.high_seq, coalesce(heads.seq, 0),
	       (SELECT t.at FROM key_seq_times t WHERE heads.seq > 0 AND t.to_seq >= heads.seq ORDER BY t.to_seq LIMIT 1)
	FROM u CROSS JOIN heads

-- statement 106: followfeed, worker
WITH upd AS (
			UPDATE papers SET
				enrich_attempts = enrich_attempts + 1,
				enrich_after = CASE WHEN enrich_attempts + 1 >= $3 THEN NULL
				               ELSE $2::timestamptz + $4 * interval '1 second' * power(2, enrich_attempts) END
			WHERE arxiv_id = ANY($1)
			RETURNING enrich_after IS NULL AS given_up
		)
		SELECT count(*) FILTER (WHERE given_up) FROM upd

-- statement 107: followfeed, worker
WITH w AS (
				UPDATE digests g SET from_seq = d.watermark,
					to_seq = greatest((SELECT high_seq FROM match_state), d.watermark)
				FROM digest_schedules d WHERE g.id = ANY($1) AND d.user_id = g.user_id
				RETURNING g.id, g.user_id, g.from_seq, g.to_seq
			), moved AS (
				UPDATE digest_schedules d SET watermark = w.to_seq FROM w
				WHERE d.user_id = w.user_id AND d.watermark < w.to_seq
			)
			SELECT id, from_seq, to_seq FROM w

-- statement 108: followfeed, worker
WITH waiting AS (UPDATE digests SET state = $2, smtp_reply = $3, updated_at = now(),
	sent_at = CASE WHEN $2 = 'sent' THEN now() END WHERE id = $1 AND $1 <> 0)
		UPDATE digests SET state = $8, attempts = attempts + 1, email = $5, message_id = $6, papers = $7, updated_at = now()
		WHERE id = $4

-- statement 109: followfeed, api worker
copy "paper_keys" ( "paper_id", "key", "version", "cross_list", "replacement", "new_paper", "event", "detail", "seq" ) from stdin binary

-- statement 110: followfeed, api
copy "paper_search_hits" ( "paper_id", "seqs" ) from stdin binary

-- statement 111: followfeed, worker
copy "river"."river_job" ( "args", "created_at", "kind", "max_attempts", "metadata", "priority", "queue", "scheduled_at", "state", "tags", "unique_key", "unique_states" ) from stdin binary

-- statement 112: followfeed, api
copy "search_hits" ( "key", "seq", "replacement", "new_paper", "paper_ids" ) from stdin binary

-- statement 113: goose, api worker
SELECT EXISTS ( SELECT 1 FROM pg_tables WHERE (current_schema() IS NULL OR schemaname = current_schema()) AND tablename = 'goose_db_version' )

-- statement 114: goose, api worker
SELECT max(version_id) FROM goose_db_version

-- statement 115: river, api worker
-- name: ColumnExists :one
SELECT EXISTS (
    SELECT column_name
    FROM information_schema.columns 
    WHERE table_name = $1::text
        AND table_schema = 'river'
        AND column_name = $2::text
)

-- statement 116: river, api
-- name: JobCountByAllStates :many
SELECT state, count(*)
FROM "river". river_job
GROUP BY state

-- statement 117: river, api
-- name: JobCountByAllStatesCapped :one
SELECT
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'available' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_available) AS available,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'cancelled' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_cancelled) AS cancelled,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'completed' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_completed) AS completed,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'discarded' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_discarded) AS discarded,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'pending' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_pending) AS pending,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'retryable' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_retryable) AS retryable,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'running' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_running) AS running,
    (SELECT count(*) FROM (SELECT 1 FROM "river".river_job WHERE state = 'scheduled' ORDER BY queue, priority, scheduled_at, id LIMIT $1::int) AS limited_scheduled) AS scheduled

-- statement 118: river, worker
-- name: JobDeleteBefore :execresult
DELETE FROM "river".river_job
WHERE id IN (
    SELECT id
    FROM "river".river_job
    WHERE (
            (state = 'cancelled' AND $1 AND finalized_at < $2::timestamptz) OR
            (state = 'completed' AND $3 AND finalized_at < $4::timestamptz) OR
            (state = 'discarded' AND $5 AND finalized_at < $6::timestamptz)
        )
        AND (
            $7::text[] IS NULL
            OR NOT (queue = any($7))
        )
        AND (
            $8::text[] IS NULL
            OR queue = any($8)
        )
    ORDER BY id
    LIMIT $9::bigint
)

-- statement 119: river, worker
-- name: JobGetAvailable :many
WITH locked_jobs AS (
    SELECT
        id, args, attempt, attempted_at, attempted_by, created_at, errors, finalized_at, kind, max_attempts, metadata, priority, queue, state, scheduled_at, tags, unique_key, unique_states
    FROM
        "river".river_job
    WHERE
        state = 'available'
        AND queue = $4::text
        AND ($5::text[] IS NULL OR kind = ANY($5::text[]))
        AND scheduled_at <= coalesce($1::timestamptz, now())
    ORDER BY
        priority ASC,
        scheduled_at ASC,
        id ASC
    LIMIT $6::integer
    FOR UPDATE
    SKIP LOCKED
)
UPDATE
    "river".river_job
SET
    state = 'running',
    attempt = river_job.attempt + 1,
    attempted_at = coalesce($1::timestamptz, now()),
    attempted_by = array_append(
        CASE WHEN array_length(river_job.attempted_by, 1) >= $2::int
        -- +2 instead of +1 because Postgres array indexing starts at 1, not 0.
        THEN river_job.attempted_by[array_length(river_job.attempted_by, 1) + 2 - $2:]
        ELSE river_job.attempted_by
        END,
        $3::text
    )
FROM
    locked_jobs
WHERE
    river_job.id = locked_jobs.id
RETURNING
    river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states

-- statement 120: river, worker
-- name: JobGetCancelRequested :many
SELECT id
FROM "river".river_job
WHERE id = any($1::bigint[])
    AND metadata ? 'cancel_attempted_at'
    AND state = 'running'
ORDER BY id

-- statement 121: river, worker
-- name: JobGetStuck :many
SELECT id, args, attempt, attempted_at, attempted_by, created_at, errors, finalized_at, kind, max_attempts, metadata, priority, queue, state, scheduled_at, tags, unique_key, unique_states
FROM "river".river_job
WHERE state = 'running'
    AND id > $1::bigint
    AND attempted_at < $2::timestamptz
ORDER BY id
LIMIT $3

-- statement 122: river, api worker
-- name: JobInsertFastMany :many
WITH raw_job_data AS (
    SELECT
        unnest($1::bigint[]) AS id,
        unnest($2::jsonb[]) AS args,
        unnest($3::timestamptz[]) AS created_at,
        unnest($4::text[]) AS kind,
        unnest($5::smallint[]) AS max_attempts,
        unnest($6::jsonb[]) AS metadata,
        unnest($7::smallint[]) AS priority,
        unnest($8::text[]) AS queue,
        unnest($9::timestamptz[]) AS scheduled_at,
        unnest($10::text[]) AS state,
        unnest($11::text[]) AS tags,
        unnest($12::bytea[]) AS unique_key,
        unnest($13::integer[]) AS unique_states
)
INSERT INTO "river".river_job(
    id,
    args,
    created_at,
    kind,
    max_attempts,
    metadata,
    priority,
    queue,
    scheduled_at,
    state,
    tags,
    unique_key,
    unique_states
) SELECT
    coalesce(nullif(id, 0), nextval('"river".river_job_id_seq'::regclass)),
    args,
    coalesce(nullif(created_at, '0001-01-01 00:00:00 +0000'), now()) AS created_at,
    kind,
    max_attempts,
    coalesce(metadata, '{}'::jsonb) AS metadata,
    priority,
    queue,
    coalesce(nullif(scheduled_at, '0001-01-01 00:00:00 +0000'), now()) AS scheduled_at,
    state::"river".river_job_state,
    string_to_array(tags, ',')::varchar(255)[],
    -- `nullif` is required for `lib/pq`, which doesn't do a good job of reading
    -- `nil` into `bytea`. We use `text` because otherwise `lib/pq` will encode
    -- to Postgres binary like `\xAAAA`.
    nullif(unique_key, '')::bytea,
    nullif(unique_states::integer, 0)::bit(8)
FROM raw_job_data
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND "river".river_job_state_in_bitmask(unique_states, state)
    -- Something needs to be updated for a row to be returned on a conflict.
    -- Keep the existing kind, which may differ under `ExcludeKind`.
    DO UPDATE SET kind = river_job.kind
RETURNING
    river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states,
    (xmax != 0) AS unique_skipped_as_duplicate

-- statement 123: river, worker
-- name: JobSchedule :many
WITH jobs_to_schedule AS (
    SELECT
        id,
        unique_key,
        unique_states,
        priority,
        scheduled_at
    FROM "river".river_job
    WHERE
        state IN ('retryable', 'scheduled')
        AND priority >= 0
        AND queue IS NOT NULL
        AND scheduled_at <= coalesce($1::timestamptz, now())
    ORDER BY
        priority,
        scheduled_at,
        id
    LIMIT $2::bigint
    FOR UPDATE
),
jobs_with_rownum AS (
    SELECT
        id, unique_key, unique_states, priority, scheduled_at,
        CASE
            WHEN unique_key IS NOT NULL AND unique_states IS NOT NULL THEN
                ROW_NUMBER() OVER (
                    PARTITION BY unique_key
                    ORDER BY priority, scheduled_at, id
                )
            ELSE NULL
        END AS row_num
    FROM jobs_to_schedule
),
unique_conflicts AS (
    SELECT river_job.unique_key
    FROM "river".river_job
    JOIN jobs_with_rownum
        ON river_job.unique_key = jobs_with_rownum.unique_key
        AND river_job.id != jobs_with_rownum.id
    WHERE
        river_job.unique_key IS NOT NULL
        AND river_job.unique_states IS NOT NULL
        AND "river".river_job_state_in_bitmask(river_job.unique_states, river_job.state)
),
job_updates AS (
    SELECT
        job.id,
        job.unique_key,
        job.unique_states,
        CASE
            WHEN job.row_num IS NULL THEN 'available'::"river".river_job_state
            WHEN uc.unique_key IS NOT NULL THEN 'discarded'::"river".river_job_state
            WHEN job.row_num = 1 THEN 'available'::"river".river_job_state
            ELSE 'discarded'::"river".river_job_state
        END AS new_state,
        (job.row_num IS NOT NULL AND (uc.unique_key IS NOT NULL OR job.row_num > 1)) AS finalized_at_do_update,
        (job.row_num IS NOT NULL AND (uc.unique_key IS NOT NULL OR job.row_num > 1)) AS metadata_do_update
    FROM jobs_with_rownum job
    LEFT JOIN unique_conflicts uc ON job.unique_key = uc.unique_key
),
updated_jobs AS (
    UPDATE "river".river_job
    SET
        state        = job_updates.new_state,
        finalized_at = CASE WHEN job_updates.finalized_at_do_update THEN coalesce($1::timestamptz, now())
                            ELSE river_job.finalized_at END,
        metadata     = CASE WHEN job_updates.metadata_do_update THEN river_job.metadata || '{"unique_key_conflict": "scheduler_discarded"}'::jsonb
                            ELSE river_job.metadata END
    FROM job_updates
    WHERE river_job.id = job_updates.id
    RETURNING
        river_job.id,
        job_updates.new_state = 'discarded'::"river".river_job_state AS conflict_discarded
)
SELECT
    river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states,
    updated_jobs.conflict_discarded
FROM "river".river_job
JOIN updated_jobs ON river_job.id = updated_jobs.id

-- statement 124: river, worker
-- name: JobSetStateIfRunningMany :many
WITH job_input AS (
    SELECT
        unnest($1::bigint[])                     AS id,
        unnest($2::boolean[])      AS attempt_do_update,
        unnest($3::int[])                    AS attempt,
        unnest($4::boolean[])       AS errors_do_update,
        unnest($5::jsonb[])                   AS errors,
        unnest($6::boolean[]) AS finalized_at_do_update,
        unnest($7::timestamptz[])       AS finalized_at,
        unnest($8::boolean[])      AS metadata_do_merge,
        unnest($9::jsonb[])         AS metadata_updates,
        unnest($10::boolean[]) AS scheduled_at_do_update,
        unnest($11::timestamptz[])       AS scheduled_at,
        -- To avoid requiring pgx users to register the OID of the river_job_state[]
        -- type, we cast the array to text[] and then to river_job_state.
        unnest($12::text[])::"river".river_job_state AS state
),
updated AS (
    UPDATE "river".river_job
    SET
        attempt = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('available','retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.attempt_do_update
            THEN job_input.attempt
            ELSE river_job.attempt
        END,
        errors = CASE
            WHEN river_job.state = 'running'
                 AND job_input.errors_do_update
            THEN array_append(river_job.errors, job_input.errors)
            ELSE river_job.errors
        END,
        finalized_at = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('available','retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN coalesce($13::timestamptz, now())
            WHEN river_job.state = 'running'
                 AND job_input.finalized_at_do_update
            THEN job_input.finalized_at
            ELSE river_job.finalized_at
        END,
        metadata = CASE
            WHEN job_input.metadata_do_merge
            THEN river_job.metadata || job_input.metadata_updates
            ELSE river_job.metadata
        END,
        scheduled_at = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('available','retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.scheduled_at_do_update
            THEN job_input.scheduled_at
            ELSE river_job.scheduled_at
        END,
        state = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('available','retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN 'cancelled'::"river".river_job_state
            WHEN river_job.state = 'running'
            THEN job_input.state
            ELSE river_job.state
        END
    FROM job_input
    WHERE river_job.id = job_input.id
      AND (river_job.state = 'running' OR job_input.metadata_do_merge)
    RETURNING river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states
)
SELECT river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states
FROM "river".river_job
JOIN job_input ON river_job.id = job_input.id
WHERE NOT EXISTS (
    SELECT 1
    FROM updated
    WHERE updated.id = river_job.id
)
UNION ALL
SELECT id, args, attempt, attempted_at, attempted_by, created_at, errors, finalized_at, kind, max_attempts, metadata, priority, queue, state, scheduled_at, tags, unique_key, unique_states
FROM updated
ORDER BY id

-- statement 125: river, worker
-- name: LeaderAttemptElect :one
INSERT INTO "river".river_leader (
    leader_id,
    elected_at,
    expires_at
) VALUES (
    $1,
    coalesce($2::timestamptz, now()),
    -- @ttl is inserted as as seconds rather than a duration because `lib/pq` doesn't support the latter
    coalesce($2::timestamptz, now()) + make_interval(secs => $3)
)
ON CONFLICT (name)
    DO NOTHING
RETURNING elected_at, expires_at, leader_id, name

-- statement 126: river, worker
-- name: LeaderAttemptReelect :one
UPDATE "river".river_leader
SET expires_at = coalesce($1::timestamptz, now()) + make_interval(secs => $2)
WHERE
    elected_at = $3::timestamptz
    AND expires_at >= coalesce($1::timestamptz, now())
    AND leader_id = $4
RETURNING elected_at, expires_at, leader_id, name

-- statement 127: river, worker
-- name: LeaderDeleteExpired :execrows
DELETE FROM "river".river_leader
WHERE expires_at < coalesce($1::timestamptz, now())

-- statement 128: river, api worker
-- name: PGGetProductAndVersion :one
SELECT
    version()::text AS product,
    current_setting('server_version_num')::int AS version_num,
    coalesce(current_setting('yb_enable_listen_notify', true), 'off')::boolean AS yb_listen_notify_enabled

-- statement 129: river, api worker
-- name: PGNotifyMany :exec
WITH topic_to_notify AS (
    SELECT
        concat(coalesce($1::text, current_schema()), '.', $2::text) AS topic,
        unnest($3::text[]) AS payload
)
SELECT pg_notify(
    topic_to_notify.topic,
    topic_to_notify.payload
  )
FROM topic_to_notify

-- statement 130: river, worker
-- name: QueueCreateOrSetUpdatedAt :one
INSERT INTO "river".river_queue (
    created_at,
    metadata,
    name,
    paused_at,
    updated_at
) VALUES (
    coalesce($1::timestamptz, now()),
    coalesce($2::jsonb, '{}'::jsonb),
    $3::text,
    coalesce($4::timestamptz, NULL),
    coalesce($5::timestamptz, $1::timestamptz, now())
) ON CONFLICT (name) DO UPDATE
SET
    updated_at = EXCLUDED.updated_at
RETURNING name, created_at, metadata, paused_at, updated_at

-- statement 131: river, worker
-- name: QueueDeleteExpired :many
DELETE FROM "river".river_queue
WHERE name IN (
    SELECT name
    FROM "river".river_queue
    WHERE river_queue.updated_at < $1
    ORDER BY name ASC
    LIMIT $2::bigint
)
RETURNING name, created_at, metadata, paused_at, updated_at

-- statement 132: river, worker
-- name: QueueGet :one
SELECT name, created_at, metadata, paused_at, updated_at
FROM "river".river_queue
WHERE name = $1::text

-- statement 133: river, api worker
-- name: RiverMigrationGetByLine :many
SELECT line, version, created_at
FROM "river".river_migration
WHERE line = $1
ORDER BY version

-- statement 134: river, api worker
-- name: TableExists :one
SELECT CASE WHEN to_regclass($1) IS NULL THEN false
            ELSE true END
