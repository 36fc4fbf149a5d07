// Package notify sends what users asked to be told: daily, weekly and
// instant digests of newly matched papers (Digester: grouped by follow,
// newest first, or best first within the user's budget through a Ranker,
// every paper with its signed feedback links), the confirmation mail
// of a new address (Confirmations), and the digest settings behind them
// (Preferences). It is the only writer of two tables: digests, the delivery
// ledger (one row per user and period, see State), and digest_schedules,
// each user's digest settings, next due time and watermark. Users, their
// addresses and suppressions are account's; mail goes out through package
// mail; River is reached only through DigestEnqueuer and
// account.ConfirmEnqueuer.
package notify
