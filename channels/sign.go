package channels

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every webhook signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: "whsec_" and the base64 of 32
// random bytes, the form the Standard Webhooks libraries read.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// newWebhookID returns a unique event id ("msg_" and 24 hex digits).
func newWebhookID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "msg_" + hex.EncodeToString(b)
}

// Sign returns the webhook-signature header value for one attempt under
// the Standard Webhooks spec: for each secret, "v1," and the base64
// HMAC-SHA256 of "id.timestamp.body" keyed with the secret's decoded bytes,
// space-separated. Empty secrets are skipped.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	var sigs []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
		if err != nil {
			return "", fmt.Errorf("channels: signing secret is not whsec_<base64>: %w", err)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
