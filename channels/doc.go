// Package channels delivers matched papers to where users work: signed
// webhooks (Standard Webhooks), Slack incoming webhooks (Block Kit),
// Discord webhooks (embeds) and Matrix rooms (client-server API). It owns
// the tables channels, channel_events (the delivery ledger: one row per
// channel and event), channel_attempts, channel_papers (the papers each
// channel was sent) and channel_reveals (one-time pages of new secrets).
//
// Flow: the match job's OnAffected hook (ScheduleInstant) or the periodic
// scheduler (ScheduleWindows, daily and weekly channels at the user's
// digest time) queues a collection; Collect takes the channel's window
// (watermark, high_seq] of matches (for a channel limited to some follows,
// each follow's own first matches), writes events and their delivery jobs,
// records the papers in channel_papers and moves the watermark in one
// transaction, so a paper reaches a channel once; Deliver sends an event
// and records every attempt.
//
// Delivery policy: at least once. An event stays pending until the
// receiver accepted it; a retry (or a worker killed mid-request, whose job
// River rescues) sends it again under the same webhook-id, which receivers
// deduplicate on (a Matrix homeserver deduplicates on the transaction id,
// which is the webhook-id). 5xx, 408, timeouts and network errors retry
// with back-off, 429 after its Retry-After; other 4xx and redirects fail the
// event. A channel without a successful attempt for DisableAfter is
// disabled and its owner mailed.
//
// Outbound requests cannot reach inside (Guard): https only (plain http
// only for CHANNEL_ALLOW_HOSTS), every connection's resolved address is
// checked right before connect (net.Dialer.Control) against loopback,
// private, link-local, CGNAT, multicast, unspecified, metadata and
// IPv4-embedding IPv6 ranges, no proxy, no redirects, RequestTimeout, and
// response bodies read up to MaxResponseBytes.
//
// River is known only through Enqueuer (implemented in worker).
package channels
