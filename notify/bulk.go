package notify

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
)

// The lab's loaders: what the benchmark and the soak write to
// digest_schedules and digests goes through these. People's settings go through Preferences,
// scheduled digests through Digester.Schedule and SendNow.

// PutDigestSettings sets the users' digest frequency and send_empty in
// one statement, in tx, creating their schedule rows where missing: for
// lab datasets (the benchmark's users), as Preferences.Update would
// set them but without its checks (no address is required) and without
// a digest time: next_at is cleared for off and instant and kept
// otherwise (none for a new row), so no scheduled digest is due because
// of it; the caller sends by hand (PutManualDigests). A user whose digests
// were off (or who had no row) starts from the high seq (no backlog), as with Update. Instant delivery that starts or stops
// updates instant_follows (its triggers). It returns how many rows it
// wrote.
func PutDigestSettings(ctx context.Context, tx pgx.Tx, userIDs []int64, f Frequency, sendEmpty bool) (int, error) {
	switch f {
	case Off, Instant, Daily, Weekly:
	default:
		return 0, fmt.Errorf("setting the digests of %d users: unknown frequency %q", len(userIDs), f)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO digest_schedules AS d (user_id, frequency, send_empty, watermark)
		SELECT u, $2, $3, `+catalog.HighSeqSQL+` FROM unnest($1::bigint[]) AS u
		ON CONFLICT (user_id) DO UPDATE SET frequency = $2, send_empty = $3,
			next_at = CASE WHEN $2 IN ('off', 'instant') THEN NULL ELSE d.next_at END,
			watermark = CASE WHEN d.frequency = 'off' AND $2 <> 'off' THEN excluded.watermark ELSE d.watermark END`,
		userIDs, string(f), sendEmpty)
	if err != nil {
		return 0, fmt.Errorf("setting the digests of %d users: %w", len(userIDs), err)
	}
	return int(tag.RowsAffected()), nil
}

// PutDigestOrder sets the users' order, budget and KeepFollowed in one
// statement, in tx, on their schedule rows (users without one are left
// alone: PutDigestSettings first): for lab datasets (the benchmark's
// best-first digests), as Preferences.Update would set them, with its
// checks. It returns how many rows it wrote.
func PutDigestOrder(ctx context.Context, tx pgx.Tx, userIDs []int64, order Order, maxPapers int, keepFollowed bool) (int, error) {
	if order != OrderNewest && order != OrderBest || maxPapers < 0 || maxPapers > MaxPapersLimit {
		return 0, fmt.Errorf("setting the digest order of %d users: order %q, budget %d: want newest or best and 0-%d", len(userIDs), order, maxPapers, MaxPapersLimit)
	}
	tag, err := tx.Exec(ctx, `UPDATE digest_schedules SET paper_order = $2, max_papers = $3, keep_followed = $4 WHERE user_id = ANY($1)`,
		userIDs, string(order), maxPapers, keepFollowed)
	if err != nil {
		return 0, fmt.Errorf("setting the digest order of %d users: %w", len(userIDs), err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteSchedules removes the users' schedule rows, in tx: they read as a
// user who never saved digest settings (digests off, the defaults), and
// instant delivery stops (instant_follows, its triggers). For taking lab
// settings off a dataset again. Ledger rows stay. It returns how many rows
// it removed.
func DeleteSchedules(ctx context.Context, tx pgx.Tx, userIDs []int64) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM digest_schedules WHERE user_id = ANY($1)`, userIDs)
	if err != nil {
		return 0, fmt.Errorf("removing the digest schedules of %d users: %w", len(userIDs), err)
	}
	return int(tag.RowsAffected()), nil
}

// ManualDigest is a by-hand digest with its window given: the papers of
// seqs (FromSeq, ToSeq].
type ManualDigest struct {
	UserID         int64
	Period         string
	FromSeq, ToSeq int64
}

// PutManualDigests writes ledger rows of kind manual, pending, with their
// windows as given, in one statement, in tx, and returns their ids in the
// order of ds: for lab measurements (the benchmark's digests of a chosen
// window). Digester.SendBatch sends them as any other row, except that
// their windows are not reserved again: the users' watermarks do not
// move. A (user, period) already in the ledger fails the statement (its
// unique key).
func PutManualDigests(ctx context.Context, tx pgx.Tx, ds []ManualDigest) ([]int64, error) {
	users, periods := make([]int64, len(ds)), make([]string, len(ds))
	froms, tos := make([]int64, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		users[i], periods[i], froms[i], tos[i] = d.UserID, d.Period, d.FromSeq, d.ToSeq
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO digests (user_id, period, kind, from_seq, to_seq)
		SELECT u, p, 'manual', f, t FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[]) AS x(u, p, f, t)
		RETURNING id, user_id, period`, users, periods, froms, tos)
	if err != nil {
		return nil, fmt.Errorf("writing %d digests: %w", len(ds), err)
	}
	type up struct {
		user   int64
		period string
	}
	byRow := make(map[up]int64, len(ds))
	for rows.Next() {
		var id int64
		var k up
		if err := rows.Scan(&id, &k.user, &k.period); err != nil {
			rows.Close()
			return nil, err
		}
		byRow[k] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("writing %d digests: %w", len(ds), err)
	}
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = byRow[up{d.UserID, d.Period}]
	}
	return ids, nil
}

// ListedPapers sums the papers the ledger rows ids listed in their mails
// (digests.shown; rows not sent count none), in tx: for lab measurements
// (how many papers the benchmark's digests carried).
func ListedPapers(ctx context.Context, tx pgx.Tx, ids []int64) (int, error) {
	var n int
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(shown), 0)::int FROM digests WHERE id = ANY($1)`, ids).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the papers of %d digests: %w", len(ids), err)
	}
	return n, nil
}

// DeleteDigests deletes the ledger rows ids, in tx, whatever their state:
// for taking lab rows off a dataset again (a deleted row's period can be
// sent once more). It returns how many it deleted.
func DeleteDigests(ctx context.Context, tx pgx.Tx, ids []int64) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM digests WHERE id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("deleting %d digests: %w", len(ids), err)
	}
	return int(tag.RowsAffected()), nil
}

// LedgerRow is one final row of the digest ledger for PutLedger, as a
// send leaves it: the user's digest of Period (kind Kind: daily, weekly,
// instant or manual) covering seqs (FromSeq, ToSeq], in final State, sent
// to Email as MessageID with Papers papers and the server's Reply, made at
// At (and, when sent, sent then).
type LedgerRow struct {
	UserID         int64
	Period         string
	Kind           Frequency
	State          State
	FromSeq, ToSeq int64
	Email          string
	MessageID      string
	Papers         int
	Reply          string
	At             time.Time
}

// bulkLedger is how many ledger rows PutLedger writes per COPY.
const bulkLedger = 20_000

// PutLedger writes final ledger rows with COPY, in tx, and returns how
// many: for lab datasets (the soak's year of digests), not for people.
// It skips everything a send does: no mail, no window is reserved (the
// users' watermarks do not move), no job, no log line. Only final rows
// may be written (a pending row would wait for a job that never comes);
// a (user, period) already in the ledger fails the load on its unique
// key.
func PutLedger(ctx context.Context, tx pgx.Tx, rows iter.Seq[LedgerRow]) (int, error) {
	n := 0
	err := database.Batches(rows, bulkLedger, func(batch []LedgerRow) error {
		for _, r := range batch {
			if !r.State.Final() {
				return fmt.Errorf("ledger row %s of user %d: state %q is not final", r.Period, r.UserID, r.State)
			}
			switch Frequency(r.Kind) {
			case Daily, Weekly, Instant, "manual":
			default:
				return fmt.Errorf("ledger row %s of user %d: unknown kind %q", r.Period, r.UserID, r.Kind)
			}
		}
		c, err := tx.CopyFrom(ctx, pgx.Identifier{"digests"}, []string{"user_id", "period", "kind", "state", "from_seq", "to_seq",
			"email", "message_id", "papers", "attempts", "smtp_reply", "created_at", "updated_at", "sent_at"},
			pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
				r := &batch[i]
				var sent *time.Time
				if r.State == StateSent {
					sent = &r.At
				}
				return []any{r.UserID, r.Period, string(r.Kind), string(r.State), r.FromSeq, r.ToSeq, r.Email, r.MessageID,
					r.Papers, 1, r.Reply, r.At, r.At, sent}, nil
			}))
		n += int(c)
		if err != nil {
			return fmt.Errorf("loading %d ledger rows: %w", len(batch), err)
		}
		return nil
	})
	return n, err
}

// MakeDailyDue makes the users' daily digests due now, in tx, their
// windows starting after fromSeq (0: every match; a negative fromSeq
// keeps a user's watermark), creating schedule rows where missing: for
// the lab's scenarios, which cannot wait for a user's digest hour
// (Preferences schedules one there, hours away, and starts its window at
// the high seq). The scheduler then reserves and sends them as any due
// digest. It returns how many rows it wrote.
func MakeDailyDue(ctx context.Context, tx pgx.Tx, userIDs []int64, fromSeq int64) (int, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO digest_schedules AS d (user_id, frequency, next_at, watermark)
		SELECT unnest($1::bigint[]), 'daily', now(), greatest($2, 0)
		ON CONFLICT (user_id) DO UPDATE SET frequency = 'daily', next_at = now(),
			watermark = CASE WHEN $2 < 0 THEN d.watermark ELSE $2 END`, userIDs, fromSeq)
	if err != nil {
		return 0, fmt.Errorf("making the digests of %d users due: %w", len(userIDs), err)
	}
	return int(tag.RowsAffected()), nil
}
