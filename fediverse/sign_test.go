package fediverse_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strings"
	"testing"
	"time"

	"followfeed/fediverse"
)

// createBody is a Create of a paper's note as the fan-out writes it.
var createBody = []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://followfeed.example/ap/activities/123456","type":"Create",` +
	`"actor":"https://followfeed.example/ap/actors/orcid_0000-0002-1825-0097","published":"2026-12-02T00:00:00Z",` +
	`"to":["https://www.w3.org/ns/activitystreams#Public"],"cc":["https://followfeed.example/ap/actors/orcid_0000-0002-1825-0097/followers"],` +
	`"object":{"id":"https://followfeed.example/ap/notes/98765","type":"Note","attributedTo":"https://followfeed.example/ap/actors/orcid_0000-0002-1825-0097",` +
	`"published":"2026-12-02T00:00:00Z","url":"https://arxiv.org/abs/2202.02326","to":["https://www.w3.org/ns/activitystreams#Public"],` +
	`"cc":["https://followfeed.example/ap/actors/orcid_0000-0002-1825-0097/followers"],"content":"<p><a href=\"https://arxiv.org/abs/2202.02326\">` +
	strings.Repeat("Towards Training Reproducible Deep Learning Models ", 2) + `</a></p><p>Mingzhi Wen, Ann Other, Bo Third</p>` +
	`<p><a href=\"https://arxiv.org/pdf/2202.02326\">PDF</a> · arXiv:2202.02326</p>","tag":[{"type":"Hashtag","href":"https://arxiv.org/list/cs.LG/new","name":"#cs_LG"}]}}`)

// BenchmarkSignCreate is the cost of one delivery's signature: building
// the POST of a Create, its SHA-256 Digest and an RSA-SHA256 signature
// (2048-bit key) over five headers with go-fed/httpsig, which names the
// algorithm hs2019 in the Signature header.
func BenchmarkSignCreate(b *testing.B) {
	key, err := rsa.GenerateKey(rand.Reader, fediverse.KeyBits)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	date := time.Now().UTC().Format(http.TimeFormat)
	b.ReportAllocs()
	b.SetBytes(int64(len(createBody)))
	for b.Loop() {
		if _, err := fediverse.SignPost(ctx, key, "https://followfeed.example/ap/actors/x#main-key", "https://mastodon.example/inbox", createBody, date); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSignPostIsWhatPeersVerify: the signature covers what Mastodon
// requires, names its algorithm hs2019 (go-fed/httpsig's way: RSA-SHA256
// with an RSA key, which Mastodon accepts as it accepts rsa-sha256) and
// the Digest is the body's.
func TestSignPostIsWhatPeersVerify(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, fediverse.KeyBits)
	req, err := fediverse.SignPost(context.Background(), key, "https://f.example/ap/actors/x#main-key", "https://m.example/inbox", createBody, time.Now().UTC().Format(http.TimeFormat))
	if err != nil {
		t.Fatal(err)
	}
	sig := req.Header.Get("Signature")
	for _, want := range []string{`keyId="https://f.example/ap/actors/x#main-key"`, `algorithm="hs2019"`, `headers="(request-target) host date digest content-type"`} {
		if !strings.Contains(sig, want) {
			t.Errorf("Signature %q lacks %s", sig, want)
		}
	}
	if !strings.HasPrefix(req.Header.Get("Digest"), "SHA-256=") || req.Header.Get("Date") == "" || req.Header.Get("Host") != "" || req.Host != "m.example" {
		t.Errorf("headers %v host %q", req.Header, req.Host)
	}
}
