// Package mail builds and delivers email: Message renders one RFC 5322
// message (deterministic bytes, 8bit or quoted-printable bodies, List-Id and
// one-click List-Unsubscribe), and a Sender hands it over, SMTPSender over a
// small pool of SMTP connections (STARTTLS or implicit TLS, AUTH, 8BITMIME)
// and DirSender as .eml files for development. Every failure is a *SendError
// saying whether a retry is safe. It knows nothing of users, digests or the
// database.
package mail
