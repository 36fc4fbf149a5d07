package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// minRSABits is the smallest RSA modulus accepted for verification.
const minRSABits = 2048

// The JWS algorithms this package can verify, by key family.
var (
	// rsaAlgs are what an RSA key without a declared alg verifies: one
	// family (RSASSA-PKCS1-v1_5), never PKCS1-v1_5 and PSS alike. PS256
	// needs a JWKS key declared "alg": "PS256" (see jwkFor).
	rsaAlgs = []string{"RS256", "RS384", "RS512"}
	// asymmetricAlgs is what a JWKS may serve: its keys are not known until
	// fetched, and the key's own type decides per token (see keyFits).
	asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"}
)

// parsePublicKeysPEM reads every PEM block of data. Each block must be a
// "PUBLIC KEY" (PKIX), "RSA PUBLIC KEY" (PKCS #1) or "CERTIFICATE" holding an
// RSA (>= 2048 bits), ECDSA P-256/P-384 or Ed25519 key; anything else is an
// error naming the block (1-based) and the reason. Text between blocks (such
// as openssl's "subject=" lines) is ignored. The keys are *rsa.PublicKey,
// *ecdsa.PublicKey or ed25519.PublicKey.
func parsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	rest := data
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		key, err := parsePEMBlock(block)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d (%q): %w", n, block.Type, err)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, errors.New("the file is empty")
		}
		return nil, errors.New(`no PEM block found: expected "-----BEGIN PUBLIC KEY-----", "-----BEGIN RSA PUBLIC KEY-----" or "-----BEGIN CERTIFICATE-----"`)
	}
	return keys, nil
}

func parsePEMBlock(b *pem.Block) (crypto.PublicKey, error) {
	var key any
	switch b.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a valid PKIX public key: %w", err)
		}
		key = k
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a valid PKCS #1 RSA public key: %w", err)
		}
		key = k
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a valid X.509 certificate: %w", err)
		}
		key = c.PublicKey
	default:
		if strings.Contains(b.Type, "PRIVATE KEY") {
			return nil, errors.New("this is a private key; the file must hold only public keys or certificates (derive one with `openssl pkey -pubout`)")
		}
		return nil, errors.New(`unsupported block type; use "PUBLIC KEY", "RSA PUBLIC KEY" or "CERTIFICATE"`)
	}
	desc, algs := describeKey(key)
	if len(algs) == 0 {
		return nil, fmt.Errorf("%s cannot verify JWTs here; supported: RSA >= %d bits, ECDSA P-256 or P-384, Ed25519", desc, minRSABits)
	}
	return key, nil
}

// describeKey names a public key for messages and lists the JWS algorithms
// this package verifies with it (none for unsupported keys).
func describeKey(key any) (desc string, algs []string) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		bits := k.N.BitLen()
		if bits < minRSABits {
			return fmt.Sprintf("an RSA %d-bit key (too weak)", bits), nil
		}
		return fmt.Sprintf("an RSA %d-bit key", bits), rsaAlgs
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "an ECDSA P-256 key", []string{"ES256"}
		case elliptic.P384():
			return "an ECDSA P-384 key", []string{"ES384"}
		}
		return fmt.Sprintf("an ECDSA %s key", k.Curve.Params().Name), nil
	case ed25519.PublicKey:
		return "an Ed25519 key", []string{"EdDSA"}
	case []byte:
		return "a symmetric key", nil
	case nil:
		return "no key", nil
	}
	return fmt.Sprintf("a %T key", key), nil
}

// keyFits reports whether key may verify tokens signed with alg. This is the
// one place that ties algorithms to key types; it is what makes key confusion
// (an HMAC check keyed with public key bytes, an RSA token checked against an
// EC key) impossible.
func keyFits(key any, alg string) bool {
	_, algs := describeKey(key)
	return slices.Contains(algs, alg)
}

// publicOf returns the public half of a private key and key itself otherwise.
func publicOf(key any) any {
	if p, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		return p.Public()
	}
	return key
}
