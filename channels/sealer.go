package channels

// Sealer seals another package's credentials at rest exactly as channel
// credentials are sealed (AES-256-GCM, a key derived from SECRET_KEY by
// HKDF-SHA256 for the sealer's purpose, the credential's kind and owner id
// as additional data, the enc1: format), so there is one implementation.
type Sealer struct{ s *sealer }

// NewSealer returns a sealer whose key is derived from secretKey for
// purpose ("followfeed activitypub keys v1"): a value sealed for one
// purpose does not open under another.
func NewSealer(secretKey []byte, purpose string) (*Sealer, error) {
	s, err := newSealerFor(secretKey, purpose)
	if err != nil {
		return nil, err
	}
	return &Sealer{s: s}, nil
}

// Seal returns the stored form of plain for (kind, owner) ("" stays "").
func (s *Sealer) Seal(kind string, owner int64, plain string) string {
	return s.s.seal(kind, owner, plain)
}

// Open returns what a stored value holds: a sealed value is decrypted (an
// error when it was sealed under another SECRET_KEY, kind or owner, or
// altered); a value stored unsealed is returned as it is.
func (s *Sealer) Open(kind string, owner int64, stored string) (string, error) {
	return s.s.open(kind, owner, stored)
}
