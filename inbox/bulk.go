package inbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The lab's loader and remover: the benchmark gives its generated users
// read state (many users at once, to measure digests with it) with
// PutStates, and takes it off its dataset again with RemoveAllStates.
// People's states go through Set, MarkAllRead and Opened.

// Mark is one user's state of one paper, for PutStates.
type Mark struct {
	UserID, PaperID int64 // papers.id
	State           State // Read or Done
}

// PutStates writes marks in one statement, in tx: for lab datasets (the
// benchmark's users), as Set would write them one by one, but without
// its checks (the papers are given by id and must exist) and without
// bumping the users' feed versions (account.BumpFeeds: a lab's feeds
// with ?unread=1 keep their ETag). A mark of a paper the user already
// marked changes its state. It returns how many rows it wrote; a mark
// that is not Read or Done is an error and nothing is written.
func PutStates(ctx context.Context, tx pgx.Tx, marks []Mark) (int, error) {
	users, papers, states := make([]int64, len(marks)), make([]int64, len(marks)), make([]string, len(marks))
	for i, m := range marks {
		if m.State != Read && m.State != Done {
			return 0, fmt.Errorf("loading %d paper states: user %d's paper %d: state %q is not read or done", len(marks), m.UserID, m.PaperID, m.State)
		}
		users[i], papers[i], states[i] = m.UserID, m.PaperID, string(m.State)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO paper_states AS s (user_id, paper_id, state)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
		ON CONFLICT (user_id, paper_id) DO UPDATE SET state = EXCLUDED.state, changed_at = now() WHERE s.state <> EXCLUDED.state`,
		users, papers, states)
	if err != nil {
		return 0, fmt.Errorf("loading %d paper states: %w", len(marks), err)
	}
	return int(tag.RowsAffected()), nil
}

// RemoveAllStates deletes every paper state, in tx, and returns how many it
// deleted: for taking a lab dataset (the benchmark's, whose generated
// users have none) back to what it was built with after a measurement.
// It is every user's read state: never for a service's database. The
// inbox settings ("remember what I opened") are left alone.
func RemoveAllStates(ctx context.Context, tx pgx.Tx) (int, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM paper_states`)
	if err != nil {
		return 0, fmt.Errorf("removing every paper state: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
