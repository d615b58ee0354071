// Package secret seals provider credentials at rest with AES-256-GCM under
// the deployment's encryption key (API.md §1: GATEWAY_ENCRYPTION_KEY, or a
// generated key file in the data directory).
//
// secret is a leaf: it imports no other internal package.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

// version prefixes every sealed value so the format can change later.
const version byte = 1

// ErrOpen is returned when a sealed value cannot be opened: wrong key,
// tampered ciphertext or wrong associated data.
var ErrOpen = errors.New("secret: cannot open sealed value")

// Box seals and opens values. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// NewBox returns a Box for a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext. aad binds the ciphertext to its owner (for
// example the virtual key's id) so a sealed value cannot be moved to
// another row and opened there.
func (b *Box) Seal(plaintext, aad []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("secret: crypto/rand failed: " + err.Error())
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, aad)
}

// Open decrypts a value made by Seal with the same aad.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// KeyFileName is the generated key's file name inside the data directory.
const KeyFileName = "encryption.key"

// LoadKey returns the deployment key: the base64 value of envValue when it
// is set, else the key file in dataDir, created (mode 0600) with a random
// key when absent. The second result reports whether a key file was made.
func LoadKey(envValue, dataDir string) (key []byte, created bool, err error) {
	if envValue != "" {
		return decodeKey(envValue, "GATEWAY_ENCRYPTION_KEY")
	}
	path := filepath.Join(dataDir, KeyFileName)
	b, err := os.ReadFile(path)
	if err == nil {
		return decodeKey(string(b), path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("secret: read key file: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("secret: create data dir: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			// Another process created it first; use theirs.
			return LoadKey("", dataDir)
		}
		return nil, false, fmt.Errorf("secret: create key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("secret: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, err
	}
	return key, true, nil
}

func decodeKey(s, from string) ([]byte, bool, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, false, fmt.Errorf("secret: %s is not valid base64: %w", from, err)
	}
	if len(key) != KeySize {
		return nil, false, fmt.Errorf("secret: %s must decode to %d bytes, got %d", from, KeySize, len(key))
	}
	return key, false, nil
}
