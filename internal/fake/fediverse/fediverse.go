// Package fediverse is a fake fediverse server for tests and the soak: an
// independent implementation of the peer side of ActivityPub. It has its
// own RSA key pair and actors, serves their actor documents, a personal
// inbox each and a shared inbox, signs what it sends the way Mastodon does
// (draft-cavage, rsa-sha256 over (request-target) host date digest
// content-type) or, when told to (SignWith), with algorithm="hs2019" as
// Mastodon also accepts it, and verifies everything it receives with the
// standard library's crypto written here (not go-fed/httpsig, which
// followfeed signs with): the Signature over the headers it names, the
// Digest of the body, the key fetched from the keyId. Its inboxes can be
// made to fail.
package fediverse

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Received is one activity an inbox accepted, after its signature and
// digest verified.
type Received struct {
	Inbox    string // the path: "/inbox" (shared) or "/users/NAME/inbox"
	KeyID    string
	Activity map[string]any
	Body     []byte
}

// Type is the activity's type.
func (r Received) Type() string { s, _ := r.Activity["type"].(string); return s }

// ID is the activity's id.
func (r Received) ID() string { s, _ := r.Activity["id"].(string); return s }

// Object is the activity's object as a map (nil for a reference).
func (r Received) Object() map[string]any { m, _ := r.Activity["object"].(map[string]any); return m }

// Signing is how the fake signs what it sends: a draft-cavage Signature
// with an RSA key (RSASSA-PKCS1-v1_5 over SHA-256) in every case; what
// differs is the algorithm it names and what the signature covers.
type Signing int

const (
	// RSASHA256 names algorithm="rsa-sha256" and covers (request-target)
	// host date digest content-type: what Mastodon sends (the default).
	RSASHA256 Signing = iota
	// HS2019 names algorithm="hs2019" (the algorithm is the key's own) over
	// the same headers, as go-fed/httpsig-based servers (GoToSocial) send it
	// and Mastodon verifies it: as rsa-sha256 for an RSA key.
	HS2019
	// HS2019Created is hs2019 over (request-target) host (created)
	// (expires) digest content-type, with the created and expires
	// parameters (now and 5 minutes on) and no Date header: the draft's
	// own form for hs2019, which Mastodon accepts only with hs2019.
	HS2019Created
)

// Server is the fake.
type Server struct {
	*httptest.Server
	key    *rsa.PrivateKey
	client *http.Client

	mu       sync.Mutex
	signing  Signing
	received []Received
	rejected []string // why requests were refused
	// failing answers every inbox POST with this status while > 0.
	failing  int
	attempts int
	requests int
	notify   chan struct{}
	// inboxes overrides an actor's inbox and shared inbox (SetInboxes).
	inboxes map[string][2]string
}

// Start starts a fake server on 127.0.0.1 with a fresh key.
func Start() (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &Server{key: key, client: &http.Client{Timeout: 10 * time.Second}, notify: make(chan struct{}, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// Rotate gives the fake a new key pair (its actors' documents serve the
// new public key from now on).
func (s *Server) Rotate() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return nil
}

// SetInboxes makes name's actor document name inbox and sharedInbox
// (an empty one: the default) instead of the fake's own: a follower whose
// inboxes are elsewhere, at an internal address for instance. The key is
// still served by the fake.
func (s *Server) SetInboxes(name, inbox, sharedInbox string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inboxes == nil {
		s.inboxes = map[string][2]string{}
	}
	s.inboxes[name] = [2]string{inbox, sharedInbox}
}

// inboxesOf is name's inbox and shared inbox.
func (s *Server) inboxesOf(name string) (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inbox, shared := s.ActorID(name)+"/inbox", s.SharedInbox()
	if o, ok := s.inboxes[name]; ok {
		if o[0] != "" {
			inbox = o[0]
		}
		if o[1] != "" {
			shared = o[1]
		}
	}
	return inbox, shared
}

// SignWith makes the fake sign what it sends (Signed, SignRequest, Send)
// with g from now on.
func (s *Server) SignWith(g Signing) {
	s.mu.Lock()
	s.signing = g
	s.mu.Unlock()
}

func (s *Server) signingMode() Signing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signing
}

func (s *Server) privateKey() *rsa.PrivateKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// ActorID is the id of the fake's actor name ("alice").
func (s *Server) ActorID(name string) string { return s.URL + "/users/" + name }

// SharedInbox is the fake's shared inbox URL.
func (s *Server) SharedInbox() string { return s.URL + "/inbox" }

// Fail makes every inbox POST answer status (503, 410, …) until Fail(0).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	s.failing = status
	s.mu.Unlock()
}

// Attempts counts the inbox POSTs that reached the fake (failed ones too).
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Received returns the verified activities so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Rejected returns why requests were refused (bad signatures, digests).
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// Wait returns once cond holds for the received activities, or an error
// after timeout.
func (s *Server) Wait(timeout time.Duration, cond func([]Received) bool) error {
	deadline := time.After(timeout)
	for {
		if cond(s.Received()) {
			return nil
		}
		select {
		case <-s.notify:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("fake fediverse: condition not met after %s (received %d, rejected %v)", timeout, len(s.Received()), s.Rejected())
		}
	}
}

func (s *Server) publicPEM() string {
	der, _ := x509.MarshalPKIXPublicKey(&s.privateKey().PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// Requests counts every request that reached the fake (GETs too).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/users/"):
		name := strings.TrimPrefix(r.URL.Path, "/users/")
		id := s.ActorID(name)
		inbox, shared := s.inboxesOf(name)
		w.Header().Set("Content-Type", "application/activity+json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"@context":          []string{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
			"id":                id,
			"type":              "Person",
			"preferredUsername": name,
			"inbox":             inbox,
			"outbox":            id + "/outbox",
			"endpoints":         map[string]string{"sharedInbox": shared},
			"publicKey":         map[string]string{"id": id + "#main-key", "owner": id, "publicKeyPem": s.publicPEM()},
		})
	case r.Method == http.MethodPost && (r.URL.Path == "/inbox" || strings.HasSuffix(r.URL.Path, "/inbox")):
		s.inbox(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) reject(w http.ResponseWriter, why string) {
	s.mu.Lock()
	s.rejected = append(s.rejected, why)
	s.mu.Unlock()
	http.Error(w, why, http.StatusUnauthorized)
}

func (s *Server) inbox(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.attempts++
	failing := s.failing
	s.mu.Unlock()
	if failing > 0 {
		http.Error(w, "failing on purpose", failing)
		return
	}
	keyID, err := s.verify(r, body)
	if err != nil {
		s.reject(w, err.Error())
		return
	}
	var a map[string]any
	if err := json.Unmarshal(body, &a); err != nil {
		s.reject(w, "not JSON: "+err.Error())
		return
	}
	s.mu.Lock()
	s.received = append(s.received, Received{Inbox: r.URL.Path, KeyID: keyID, Activity: a, Body: body})
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
}

// verify checks a draft-cavage signature with crypto/rsa: the Digest of
// the body, the signed headers (which must include (request-target), host,
// digest and date, or with hs2019 (created) instead), a Date or (created)
// within an hour and an (expires) not past, and the signature with the key
// its keyId serves. It returns the keyId.
func (s *Server) verify(r *http.Request, body []byte) (string, error) {
	sum := sha256.Sum256(body)
	if got, want := r.Header.Get("Digest"), "SHA-256="+base64.StdEncoding.EncodeToString(sum[:]); got != want {
		return "", fmt.Errorf("digest %q, want %q", got, want)
	}
	params := map[string]string{}
	for _, part := range strings.Split(r.Header.Get("Signature"), ",") {
		k, v, ok := strings.Cut(part, "=")
		if ok {
			params[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	if params["algorithm"] != "rsa-sha256" && params["algorithm"] != "hs2019" {
		return "", fmt.Errorf("algorithm %q", params["algorithm"])
	}
	headers := strings.Fields(params["headers"])
	need := map[string]bool{"(request-target)": true, "host": true, "date": true, "digest": true}
	if params["algorithm"] == "hs2019" && slices.Contains(headers, "(created)") {
		delete(need, "date") // (created) dates the signature
	}
	var lines []string
	for _, h := range headers {
		delete(need, h)
		switch h {
		case "(request-target)":
			lines = append(lines, "(request-target): "+strings.ToLower(r.Method)+" "+r.URL.RequestURI())
		case "host":
			lines = append(lines, "host: "+r.Host)
		case "(created)", "(expires)":
			if params["algorithm"] != "hs2019" {
				return "", fmt.Errorf("%s with algorithm %q", h, params["algorithm"])
			}
			n, err := strconv.ParseInt(params[strings.Trim(h, "()")], 10, 64)
			if err != nil {
				return "", fmt.Errorf("%s without its parameter", h)
			}
			if h == "(created)" && time.Since(time.Unix(n, 0)).Abs() > time.Hour || h == "(expires)" && time.Now().Unix() > n {
				return "", fmt.Errorf("%s %d", h, n)
			}
			lines = append(lines, h+": "+strconv.FormatInt(n, 10))
		case "date":
			d, err := http.ParseTime(r.Header.Get("Date"))
			if err != nil || time.Since(d).Abs() > time.Hour {
				return "", fmt.Errorf("date %q", r.Header.Get("Date"))
			}
			lines = append(lines, "date: "+r.Header.Get("Date"))
		default:
			lines = append(lines, h+": "+r.Header.Get(h))
		}
	}
	if len(need) > 0 {
		return "", fmt.Errorf("signature does not cover %v", need)
	}
	sig, err := base64.StdEncoding.DecodeString(params["signature"])
	if err != nil {
		return "", errors.New("signature not base64")
	}
	pub, err := s.fetchKey(r.Context(), params["keyId"])
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig); err != nil {
		return "", fmt.Errorf("signature by %s does not verify", params["keyId"])
	}
	return params["keyId"], nil
}

// fetchKey dereferences a keyId: the actor document, whose publicKey must
// have that id.
func (s *Server) fetchKey(ctx context.Context, keyID string) (*rsa.PublicKey, error) {
	u, _, _ := strings.Cut(keyID, "#")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/activity+json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching key %s: %w", keyID, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/activity+json") && !strings.HasPrefix(ct, "application/ld+json") {
		return nil, fmt.Errorf("key %s served as %q", keyID, ct)
	}
	var doc struct {
		PublicKey struct{ ID, Owner, PublicKeyPem string } `json:"publicKey"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("key %s: %w", keyID, err)
	}
	if doc.PublicKey.ID != keyID {
		return nil, fmt.Errorf("the actor's key is %s, not %s", doc.PublicKey.ID, keyID)
	}
	block, _ := pem.Decode([]byte(doc.PublicKey.PublicKeyPem))
	if block == nil {
		return nil, fmt.Errorf("key %s is not PEM", keyID)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key %s is not RSA", keyID)
	}
	return pub, nil
}

// Signed returns a POST of activity to inbox signed as Mastodon signs:
// Date, Digest (SHA-256), and a Signature (rsa-sha256) over
// (request-target) host date digest content-type by name's key; or as
// SignWith chose (HS2019Created: no Date header).
func (s *Server) Signed(name, inbox string, activity any) (*http.Request, []byte, error) {
	body, err := json.Marshal(activity)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, inbox, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(body)
	req.Header.Set("Content-Type", "application/activity+json")
	if s.signingMode() != HS2019Created {
		req.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	req.Header.Set("Digest", "SHA-256="+base64.StdEncoding.EncodeToString(sum[:]))
	s.SignRequest(name, req)
	return req, body, nil
}

// SignRequest (re)signs req's current headers as name, as SignWith chose
// (HS2019Created: created now, expires in 5 minutes).
func (s *Server) SignRequest(name string, req *http.Request) {
	mode := s.signingMode()
	algorithm, dated, extra := "rsa-sha256", []string{"date: " + req.Header.Get("Date")}, ""
	switch mode {
	case HS2019:
		algorithm = "hs2019"
	case HS2019Created:
		created := time.Now().Unix()
		algorithm = "hs2019"
		dated = []string{"(created): " + strconv.FormatInt(created, 10), "(expires): " + strconv.FormatInt(created+300, 10)}
		extra = fmt.Sprintf(`created=%d,expires=%d,`, created, created+300)
	}
	lines := slices.Concat([]string{
		"(request-target): " + strings.ToLower(req.Method) + " " + req.URL.RequestURI(),
		"host: " + req.URL.Host,
	}, dated, []string{
		"digest: " + req.Header.Get("Digest"),
		"content-type: " + req.Header.Get("Content-Type"),
	})
	names := make([]string, len(lines))
	for i, l := range lines {
		names[i], _, _ = strings.Cut(l, ":")
	}
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, s.privateKey(), crypto.SHA256, h[:])
	req.Header.Set("Signature", fmt.Sprintf(`keyId="%s#main-key",algorithm="%s",%sheaders="%s",signature="%s"`,
		s.ActorID(name), algorithm, extra, strings.Join(names, " "), base64.StdEncoding.EncodeToString(sig)))
}

// Send signs and POSTs activity to inbox as name and returns the status.
func (s *Server) Send(name, inbox string, activity any) (int, string, error) {
	req, _, err := s.Signed(name, inbox, activity)
	if err != nil {
		return 0, "", err
	}
	return s.Do(req)
}

// Do sends a request and returns its status and body.
func (s *Server) Do(req *http.Request) (int, string, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), nil
}
