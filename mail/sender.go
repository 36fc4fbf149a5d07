package mail

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Sender delivers one message; implementations are safe for concurrent use.
// A nil error means the message was handed over (SMTP: the server replied
// 250 to the final dot); reply then describes that hand-over. Every non-nil
// error from the Senders of this package is a *SendError. Send keeps
// neither m nor its strings after it returns: the caller may reuse the
// memory of the bodies for the next message (notify does).
type Sender interface {
	Send(ctx context.Context, m *Message) (reply string, err error)
}

// FailureKind says what the caller may do after a failed delivery.
type FailureKind int

const (
	// Temporary: the message was not accepted; sending it again later is
	// safe and may work (4xx replies, network/TLS/AUTH trouble before the
	// body was complete, a cancelled ctx before the transaction, disk errors).
	Temporary FailureKind = iota + 1
	// Permanent: the server refused with a 5xx reply (or the message cannot be
	// built); sending the same message again will fail the same way. With
	// SendError.Recipient the refusal concerns the address (suppress it).
	Permanent
	// Ambiguous: the connection broke after the whole body including the
	// final dot was written but before the server's final reply arrived. The
	// server may have accepted the message; resending risks a duplicate.
	Ambiguous
)

// String returns "temporary", "permanent" or "ambiguous".
func (k FailureKind) String() string {
	switch k {
	case Temporary:
		return "temporary"
	case Permanent:
		return "permanent"
	case Ambiguous:
		return "ambiguous"
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// SendError classifies a failed delivery so the caller can decide: retry
// (Temporary), suppress the address (Permanent with Recipient), or not resend
// because the server may have accepted it (Ambiguous). It never contains the
// SMTP password.
type SendError struct {
	Kind FailureKind
	// Code is the SMTP reply code that caused the failure, 0 if there was
	// none (network error, timeout, invalid message).
	Code int
	// Reply is the server's reply ("550 5.1.1 no such user"), when known.
	Reply string
	// Recipient is true when the failure concerns the recipient: any reply to
	// RCPT, a 5xx reply to the final dot (one recipient per message), or an
	// unparsable Message.To.
	Recipient bool
	// Err is the underlying error, wrapped with what was being done.
	Err error
}

// Error describes kind, code and cause, e.g. "mail: permanent delivery
// failure (SMTP 550, recipient): send message x@y via host:25: ...".
func (e *SendError) Error() string {
	var b strings.Builder
	b.WriteString("mail: ")
	b.WriteString(e.Kind.String())
	b.WriteString(" delivery failure")
	switch {
	case e.Code != 0 && e.Recipient:
		fmt.Fprintf(&b, " (SMTP %d, recipient)", e.Code)
	case e.Code != 0:
		fmt.Fprintf(&b, " (SMTP %d)", e.Code)
	case e.Recipient:
		b.WriteString(" (recipient)")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *SendError) Unwrap() error { return e.Err }
