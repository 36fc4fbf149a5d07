package mail

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DirSender "delivers" by storing each message as <dir>/<MessageID>.eml
// (MessageID sanitised for file names), for development and tests. The file
// holds exactly Message.Bytes(); it is written to a temporary file in dir and
// renamed, so users never see a partial file. Sending the same MessageID
// again overwrites the file with the same bytes: it is idempotent. Safe for
// concurrent use.
type DirSender struct {
	dir string
}

// NewDirSender returns a DirSender writing into dir, which is created on
// first use.
func NewDirSender(dir string) *DirSender { return &DirSender{dir: dir} }

// Send stores m and returns "stored <path>". An invalid message gives a
// Permanent *SendError; a file system error or a ctx cancelled before writing
// a Temporary one.
func (d *DirSender) Send(ctx context.Context, m *Message) (string, error) {
	data, err := m.Bytes()
	if err != nil {
		return "", &SendError{Kind: Permanent, Recipient: errors.Is(err, errBadRecipient), Err: err}
	}
	if err := ctx.Err(); err != nil {
		return "", &SendError{Kind: Temporary, Err: fmt.Errorf("store message %s: %w", m.MessageID, err)}
	}
	path := filepath.Join(d.dir, emlFileName(m.MessageID))
	if err := writeFileAtomic(d.dir, path, data); err != nil {
		return "", &SendError{Kind: Temporary, Err: fmt.Errorf("store message %s: %w", m.MessageID, err)}
	}
	return "stored " + path, nil
}

func writeFileAtomic(dir, path string, data []byte) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*.eml")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// emlFileName returns the file name DirSender uses for a Message-ID: every
// byte outside [A-Za-z0-9.@+=_-] becomes "_", a leading "." becomes "_", and
// names longer than 200 bytes are cut and suffixed with a hash of the full ID
// so they stay unique.
func emlFileName(messageID string) string {
	b := []byte(messageID)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".@+=_-", c) >= 0
		if !ok || (i == 0 && c == '.') {
			b[i] = '_'
		}
	}
	name := string(b)
	if name == "" {
		name = "_"
	}
	if len(name) > 200 {
		sum := sha256.Sum256([]byte(messageID))
		name = name[:180] + "-" + hex.EncodeToString(sum[:8])
	}
	return name + ".eml"
}
