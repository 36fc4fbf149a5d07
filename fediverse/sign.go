package fediverse

import (
	"bytes"
	"context"
	"crypto/rsa"
	"fmt"
	"net/http"

	"github.com/go-fed/httpsig"

	"followfeed/internal/httpclient"
)

// Outgoing requests are signed as Mastodon expects them: draft-cavage HTTP
// Signatures with RSA-SHA256 (go-fed/httpsig names the algorithm hs2019,
// which Mastodon verifies with the key's RSA-SHA256 as it does
// rsa-sha256), over (request-target), host, date and, for a POST, digest
// (SHA-256 of the body, RFC 3230) and content-type, in the Signature
// header.
var (
	postHeaders = []string{httpsig.RequestTarget, "host", "date", "digest", "content-type"}
	getHeaders  = []string{httpsig.RequestTarget, "host", "date"}
)

// InstanceActor is the path of the instance's own actor, which signs the
// GETs of remote keys (servers in authorized-fetch mode want them signed).
const InstanceActor = "/ap/instance"

// SignPost builds the POST of body (an activity) to inbox, signed with
// key under keyID: Date, Host, Digest, Content-Type and Signature set.
// It is what every delivery sends; BenchmarkSignCreate measures it.
func SignPost(ctx context.Context, key *rsa.PrivateKey, keyID, inbox string, body []byte, date string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inbox, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", ContentTypeActivity)
	req.Header.Set("Accept", ContentTypeActivity)
	req.Header.Set("User-Agent", httpclient.UserAgent)
	if err := sign(req, key, keyID, postHeaders, body, date); err != nil {
		return nil, err
	}
	return req, nil
}

// signGet signs a GET (a remote key or actor fetch).
func signGet(ctx context.Context, key *rsa.PrivateKey, keyID, target, date string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", ContentTypeActivity+", "+ContentTypeLD)
	req.Header.Set("User-Agent", httpclient.UserAgent)
	if err := sign(req, key, keyID, getHeaders, nil, date); err != nil {
		return nil, err
	}
	return req, nil
}

func sign(req *http.Request, key *rsa.PrivateKey, keyID string, headers []string, body []byte, date string) error {
	req.Header.Set("Date", date)
	// The signed host is the one the request goes to (Go sends req.Host).
	req.Header.Set("Host", req.URL.Host)
	// A Signer is not safe for concurrent use: one per request (cheap; the
	// RSA operation is the cost).
	signer, _, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.RSA_SHA256}, httpsig.DigestSha256, headers, httpsig.Signature, 0)
	if err != nil {
		return fmt.Errorf("creating an HTTP signer: %w", err)
	}
	if err := signer.SignRequest(key, keyID, req, body); err != nil {
		return fmt.Errorf("signing %s %s: %w", req.Method, req.URL, err)
	}
	req.Header.Del("Host") // net/http sends req.Host; a Host header would be ignored
	return nil
}
