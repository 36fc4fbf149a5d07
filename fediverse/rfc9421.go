package fediverse

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RFC 9421 HTTP Message Signatures, for peers that sign that way
// (Signature-Input and Signature headers, Content-Digest): the signature
// base is built from the covered components as the RFC says (section 2.5)
// and checked with the standard library's RSA (rsa-v1_5-sha256,
// rsa-pss-sha512) or Ed25519; go-fed/httpsig knows only draft-cavage.
// The first signature of the request is the one verified.

// sig9421 is one parsed signature.
type sig9421 struct {
	components []string
	params     string // the serialised inner list and parameters, as sent
	keyID, alg string
	created    int64
	expires    int64
	signature  []byte
}

// parse9421 reads the first signature of Signature-Input and its value in
// Signature.
func parse9421(input, signature string) (sig9421, error) {
	var s sig9421
	label, rest, ok := strings.Cut(strings.TrimSpace(firstMember(input)), "=")
	if !ok || !strings.HasPrefix(rest, "(") {
		return s, errors.New("malformed Signature-Input")
	}
	s.params = rest
	end := strings.IndexByte(rest, ')')
	if end < 0 {
		return s, errors.New("malformed Signature-Input")
	}
	for _, c := range strings.Fields(rest[1:end]) {
		if len(c) < 2 || c[0] != '"' || c[len(c)-1] != '"' {
			return s, errors.New("a covered component has parameters, which are not supported")
		}
		s.components = append(s.components, c[1:len(c)-1])
	}
	for _, p := range strings.Split(rest[end+1:], ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		switch k {
		case "keyid":
			s.keyID = v
		case "alg":
			s.alg = v
		case "created":
			s.created, _ = strconv.ParseInt(v, 10, 64)
		case "expires":
			s.expires, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	for _, m := range splitParams(signature) {
		l, v, ok := strings.Cut(strings.TrimSpace(m), "=")
		if ok && l == label {
			v = strings.TrimSpace(v)
			if len(v) < 2 || v[0] != ':' || v[len(v)-1] != ':' {
				return s, errors.New("malformed Signature")
			}
			b, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
			if err != nil {
				return s, errors.New("malformed Signature")
			}
			s.signature = b
		}
	}
	if s.keyID == "" || s.signature == nil {
		return s, errors.New("the signature has no keyid or no value")
	}
	return s, nil
}

// firstMember is the first member of a structured-field dictionary.
func firstMember(h string) string {
	depth := 0
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '(':
			depth++
		case ')':
			depth--
		case '"':
			if j := strings.IndexByte(h[i+1:], '"'); j >= 0 {
				i += j + 1
			}
		case ',':
			if depth == 0 {
				return h[:i]
			}
		}
	}
	return h
}

// base9421 is the signature base of r for s (RFC 9421 section 2.5).
func (srv *Service) base9421(r Signed, s sig9421) (string, error) {
	path, query, _ := strings.Cut(r.RequestURI, "?")
	var b strings.Builder
	for _, c := range s.components {
		var v string
		switch c {
		case "@method":
			v = strings.ToUpper(r.Method)
		case "@target-uri":
			v = srv.base.Scheme + "://" + strings.ToLower(r.Host) + r.RequestURI
		case "@authority":
			v = strings.ToLower(r.Host)
		case "@scheme":
			v = srv.base.Scheme
		case "@path":
			v = path
		case "@query":
			v = "?" + query
		case "@request-target":
			v = r.RequestURI
		default:
			if strings.HasPrefix(c, "@") {
				return "", errors.New("unsupported derived component " + c)
			}
			vs, ok := r.Header[canonical(c)]
			if !ok {
				return "", errors.New("the covered header " + c + " is missing")
			}
			trimmed := make([]string, len(vs))
			for i, x := range vs {
				trimmed[i] = strings.TrimSpace(x)
			}
			v = strings.Join(trimmed, ", ")
		}
		b.WriteString(`"` + c + `": ` + v + "\n")
	}
	b.WriteString(`"@signature-params": ` + s.params)
	return b.String(), nil
}

func canonical(h string) string {
	parts := strings.Split(strings.ToLower(h), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// verify9421 is verify for RFC 9421 signatures: the signature must cover
// @method, the target (@target-uri, or @authority and @path), and with a
// body content-digest (whose sha-256 must be the body's); created (or a
// covered date) within MaxClockSkew, expires not passed.
func (s *Service) verify9421(ctx context.Context, r Signed) (*verified, error) {
	sig, err := parse9421(r.Header.Get("Signature-Input"), r.Header.Get("Signature"))
	if err != nil {
		return nil, unauthorized("%v", err)
	}
	covered := map[string]bool{}
	for _, c := range sig.components {
		covered[c] = true
	}
	switch {
	case !covered["@method"]:
		return nil, unauthorized("the signature must cover @method")
	case !covered["@target-uri"] && !(covered["@authority"] && covered["@path"]):
		return nil, unauthorized("the signature must cover @target-uri")
	case len(r.Body) > 0 && !covered["content-digest"]:
		return nil, unauthorized("the signature must cover content-digest")
	}
	switch {
	case sig.created != 0:
		if err := s.fresh(time.Unix(sig.created, 0)); err != nil {
			return nil, err
		}
	case covered["date"]:
		d, err := http.ParseTime(r.Header.Get("Date"))
		if err != nil {
			return nil, unauthorized("the Date header is not an HTTP date")
		}
		if err := s.fresh(d); err != nil {
			return nil, err
		}
	default:
		return nil, unauthorized("the signature needs a created parameter or a covered date")
	}
	if sig.expires != 0 && s.now().Unix() > sig.expires {
		return nil, unauthorized("the signature expired")
	}
	if len(r.Body) > 0 {
		if err := checkContentDigest(r.Header.Get("Content-Digest"), r.Body); err != nil {
			return nil, err
		}
	}
	base, err := s.base9421(r, sig)
	if err != nil {
		return nil, unauthorized("%v", err)
	}
	k, gone, err := s.checkedKey(ctx, sig.keyID, func(k *remoteKey) error {
		return check9421(k.public, sig.alg, base, sig.signature)
	})
	if err != nil || gone != "" {
		return &verified{gone: gone}, err
	}
	sum := sha256.Sum256([]byte(r.Header.Get("Signature")))
	return &verified{key: k, seen: sum[:]}, nil
}

// check9421 verifies sig over base with key, by alg (or the key's usual
// algorithm when alg is not given).
func check9421(key crypto.PublicKey, alg, base string, sig []byte) error {
	bad := unauthorized("the signature does not verify")
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case "", "rsa-v1_5-sha256":
			h := sha256.Sum256([]byte(base))
			if rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], sig) != nil {
				return bad
			}
			return nil
		case "rsa-pss-sha512":
			h := sha512.Sum512([]byte(base))
			if rsa.VerifyPSS(k, crypto.SHA512, h[:], sig, &rsa.PSSOptions{SaltLength: 64}) != nil {
				return bad
			}
			return nil
		}
	case ed25519.PublicKey:
		if alg == "" || alg == "ed25519" {
			if !ed25519.Verify(k, []byte(base), sig) {
				return bad
			}
			return nil
		}
	}
	return unauthorized("unsupported signature algorithm %q for this key", alg)
}

// checkContentDigest verifies a Content-Digest header (RFC 9530): its
// sha-256 value must be the body's.
func checkContentDigest(h string, body []byte) error {
	if h == "" {
		return unauthorized("the request has a body but no Content-Digest header")
	}
	sum := sha256.Sum256(body)
	for _, m := range splitParams(h) {
		alg, v, ok := strings.Cut(strings.TrimSpace(m), "=")
		if ok && alg == "sha-256" {
			v = strings.Trim(strings.TrimSpace(v), ":")
			got, err := base64.StdEncoding.DecodeString(v)
			if err != nil || subtle.ConstantTimeCompare(got, sum[:]) != 1 {
				return unauthorized("the Content-Digest does not match the body")
			}
			return nil
		}
	}
	return unauthorized("the Content-Digest header has no sha-256 value")
}
