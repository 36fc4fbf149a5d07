// Package account owns the people followfeed knows and how to reach them.
// It is the only writer of three tables:
//
//   - users: the row created from a verified token's claims (Users), the
//     address and its confirmation, the time zone and the link epoch that
//     revokes signed email links (Addresses);
//   - suppressions: addresses that get no mail until confirmed again
//     (Addresses.Suppress);
//   - user_feeds: the feed version, one half of a private feed's ETag (BumpFeeds;
//     the other half is the newest seq of its keys, feeds.Validators), and the stored
//     salt and hash of the private feed token (FeedTokens; package feeds
//     keeps the token crypto).
//
// What a change of address means for digests (their schedule, owned by
// notify) reaches notify through DigestHooks, run in the same transaction.
//
// Erasing a user (Users.Erase, EraseSub) is one transaction: every
// package's eraser, registered with Users.OnErase, then account's rows
// last; the suppressions of the user's addresses stay only as hashes
// (HashSuppressions, migration 00032).
package account
