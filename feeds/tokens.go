package feeds

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/ranking"
)

// TokenPrefix starts every private feed token, so secret scanners (and our
// log redaction) can recognise one.
const TokenPrefix = "fft_"

// tokenLen is the length of a token: the prefix and 43 base64url characters
// (256 bits of HMAC).
const tokenLen = len(TokenPrefix) + 43

// ErrUnknownToken is returned (wrapped) for a token that is malformed or
// belongs to nobody (never issued, or rotated away).
var ErrUnknownToken = errors.New("unknown feed token")

// State is what the conditional-GET fast path needs of a user's feeds: the
// feed row and the high seq, read in one statement.
type State struct {
	UserID    int64
	Version   int64
	ChangedAt time.Time
	HighSeq   int64 // match_state.high_seq
	// ModelAt is when the user's ranking model was stored (zero: none
	// yet), read by LookupRanked only: the ranked feed's validator.
	ModelAt time.Time
}

// Tokens issues, rotates and resolves private feed tokens. A token is never
// stored: the database keeps its SHA-256 (to find the user) and a random
// salt, and the token is HMAC(SECRET_KEY, user id, salt), so the server can
// show a user their URL again while a copy of the database alone reveals no
// token.
// The salt and hash are stored by account.FeedTokens.
type Tokens struct {
	db     *database.DB
	store  *account.FeedTokens
	secret []byte
}

// NewTokens returns the token store; secret is SECRET_KEY.
func NewTokens(db *database.DB, secret []byte) *Tokens {
	return &Tokens{db: db, store: account.NewFeedTokens(db), secret: secret}
}

func (t *Tokens) derive(userID int64, salt []byte) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte("followfeed feed token\x00"))
	m.Write([]byte(strconv.FormatInt(userID, 10)))
	m.Write([]byte{0})
	m.Write(salt)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// Token returns the user's current token, issuing one the first time.
func (t *Tokens) Token(ctx context.Context, userID int64) (string, error) {
	salt, err := t.store.Salt(ctx, userID)
	if err != nil {
		return "", err
	}
	if salt != nil {
		return t.derive(userID, salt), nil
	}
	return t.issue(ctx, userID, true)
}

// TokensMany returns the current tokens of several users, issuing the
// missing ones.
func (t *Tokens) TokensMany(ctx context.Context, userIDs []int64) (map[int64]string, error) {
	salts, err := t.store.Salts(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(userIDs))
	for id, salt := range salts {
		out[id] = t.derive(id, salt)
	}
	for _, id := range userIDs {
		if _, ok := out[id]; !ok {
			tok, err := t.Token(ctx, id)
			if err != nil {
				return nil, err
			}
			out[id] = tok
		}
	}
	return out, nil
}

// Rotate replaces the user's token: the old one stops working at once.
func (t *Tokens) Rotate(ctx context.Context, userID int64) (string, error) {
	return t.issue(ctx, userID, false)
}

func (t *Tokens) issue(ctx context.Context, userID int64, onlyIfMissing bool) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	tok := t.derive(userID, salt)
	// onlyIfMissing: two first requests racing both keep the same token
	// (the loser reads the winner's salt).
	stored, err := t.store.Store(ctx, userID, salt, hashToken(tok), onlyIfMissing)
	if err != nil {
		return "", err
	}
	if !stored {
		return t.Token(ctx, userID)
	}
	return tok, nil
}

// lookupSQL resolves token hash $1 to its user's feed row and the high seq
// in one statement: a probe of user_feeds_token_hash_idx and match_state's
// one row (the conditional GET's fast path: Validators then usually needs
// no other statement).
const lookupSQL = `
		SELECT f.user_id, f.version, f.changed_at, m.high_seq
		FROM ` + account.FeedsTable + ` f, ` + catalog.HighSeqTable + ` m WHERE f.token_hash = $1`

// lookupRankedSQL is lookupSQL with when the user's ranking model was
// stored (a primary-key probe of ranking_models; the epoch for none): the
// ranked feed's fast path, still one statement.
var lookupRankedSQL = `
		SELECT f.user_id, f.version, f.changed_at, m.high_seq,
		       coalesce(` + ranking.ModelTrainedAtSQL("f.user_id") + `, 'epoch')
		FROM ` + account.FeedsTable + ` f, ` + catalog.HighSeqTable + ` m WHERE f.token_hash = $1`

// Lookup resolves a token to its user's feed state with one statement
// (lookupSQL); malformed tokens are refused without a query. Unknown
// tokens give an error wrapping ErrUnknownToken.
func (t *Tokens) Lookup(ctx context.Context, tok string) (State, error) {
	return t.lookup(ctx, tok, false)
}

// LookupRanked is Lookup for the ranked feed: the state also holds when
// the user's ranking model was stored (State.ModelAt), in the same
// statement (lookupRankedSQL).
func (t *Tokens) LookupRanked(ctx context.Context, tok string) (State, error) {
	return t.lookup(ctx, tok, true)
}

func (t *Tokens) lookup(ctx context.Context, tok string, ranked bool) (State, error) {
	if !WellFormed(tok) {
		return State{}, ErrUnknownToken
	}
	var st State
	var err error
	if ranked {
		err = t.db.Pool.QueryRow(ctx, lookupRankedSQL, hashToken(tok)).Scan(&st.UserID, &st.Version, &st.ChangedAt, &st.HighSeq, &st.ModelAt)
		if st.ModelAt.Unix() == 0 {
			st.ModelAt = time.Time{}
		}
	} else {
		err = t.db.Pool.QueryRow(ctx, lookupSQL, hashToken(tok)).Scan(&st.UserID, &st.Version, &st.ChangedAt, &st.HighSeq)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, ErrUnknownToken
	}
	if err != nil {
		return State{}, fmt.Errorf("looking up feed token: %w", err)
	}
	return st, nil
}

// WellFormed reports whether s looks like a token we issue.
func WellFormed(s string) bool {
	if len(s) != tokenLen || s[:len(TokenPrefix)] != TokenPrefix {
		return false
	}
	for i := len(TokenPrefix); i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
