package feeds

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/identity/registrysql"
)

// MaxPingURLs caps the feed URLs one batch announces to the hub.
const MaxPingURLs = 3000

// changedPublicSQL lists the keys of the public feeds the keys $1 change
// that a ping announces, at most $2 (ChangedPublicURLs).
var changedPublicSQL = `
		WITH b AS (SELECT key FROM unnest($1::text[]) AS b(key) ORDER BY key COLLATE "C"),
		x AS (
			SELECT key FROM b
			UNION
			SELECT k2.key FROM b ` + registrysql.LinkedKeys("b.key") + `
		)
		SELECT x.key FROM x
		WHERE x.key LIKE 'category:%' OR x.key LIKE 'archive:%'
		   OR ` + follow.FollowedSQL("x.key") + `
		ORDER BY 1 LIMIT $2`

// ChangedPublicURLs lists, in every format, the public feeds a match job's
// batch changed, and no others. newKeys are the batch's keys with a first
// match (match.BatchResult.NewKeys); a public feed of one id shows the
// papers of every id of its person or institution (match.PublicIn), so
// each key is expanded through the identity registry (a primary-key probe
// and an index-only scan of identity_keys per researcher or institution
// key, in key order): a paper carrying s2:1 changes the feed of host:1
// when the registry links the two. Every category and archive feed among
// them is announced, and the researcher and institution feeds somebody
// follows (the others nobody is likely to subscribe to): a follow_counts
// primary-key probe each. Private feeds are never announced: their URLs
// are secrets and a hub is a third party.
func (s *Service) ChangedPublicURLs(ctx context.Context, tx pgx.Tx, newKeys []string) ([]string, error) {
	if s.hub == "" || len(newKeys) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, changedPublicSQL, newKeys, MaxPingURLs/len(Formats))
	if err != nil {
		return nil, fmt.Errorf("listing changed public feeds: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing changed public feeds: %w", err)
	}
	var out []string
	for _, k := range keys {
		t, err := follow.TargetFromKey(k)
		if err != nil {
			continue // a key no follow could name (e.g. an unknown new category)
		}
		for _, f := range Formats {
			out = append(out, s.PublicURL(t, f))
		}
	}
	return out, nil
}

// Publisher announces changed feeds to a WebSub hub.
type Publisher struct {
	hub    string
	client *http.Client
}

// NewPublisher returns a publisher for hub using client.
func NewPublisher(hub string, client *http.Client) *Publisher {
	return &Publisher{hub: hub, client: client}
}

// pingChunk is how many topics one publish request names.
const pingChunk = 50

// Publish sends hub.mode=publish for the topic URLs, in chunks (repeated
// hub.url parameters, as PubSubHubbub hubs accept). Any non-2xx answer is an
// error, so the job retries.
func (p *Publisher) Publish(ctx context.Context, topics []string) error {
	for i := 0; i < len(topics); i += pingChunk {
		form := url.Values{"hub.mode": {"publish"}}
		for _, t := range topics[i:min(i+pingChunk, len(topics))] {
			form.Add("hub.url", t)
		}
		req, err := http.NewRequestWithContext(ctx, "POST", p.hub, strings.NewReader(form.Encode()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := p.client.Do(req)
		if err != nil {
			return fmt.Errorf("pinging the WebSub hub: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("pinging the WebSub hub: %s", resp.Status)
		}
	}
	return nil
}
