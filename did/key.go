package did

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/torpor-dev/torpor/internal/atomicfile"
)

// PrivateKey is an agent's Ed25519 signing key together with its DID.
// Its secret never prints: String, GoString, Format through %v and
// LogValue all show only the DID.
type PrivateKey struct {
	_    [0]func() // not comparable
	priv ed25519.PrivateKey
	id   DID
}

// Generate makes a new key from rand (crypto/rand when nil).
func Generate(r io.Reader) (*PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(r, seed); err != nil {
		return nil, fmt.Errorf("did: generating key: %w", err)
	}
	return NewKeyFromSeed(seed)
}

// NewKeyFromSeed returns the key with the RFC 8032 32-byte seed.
func NewKeyFromSeed(seed []byte) (*PrivateKey, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("did: seed is %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	id, _ := FromPublicKey(priv.Public().(ed25519.PublicKey))
	return &PrivateKey{priv: priv, id: id}, nil
}

// DID returns the key's identifier.
func (k *PrivateKey) DID() DID { return k.id }

// Public returns the Ed25519 public key.
func (k *PrivateKey) Public() ed25519.PublicKey { return k.id.PublicKey() }

// Sign returns the Ed25519 signature of msg.
func (k *PrivateKey) Sign(msg []byte) []byte { return ed25519.Sign(k.priv, msg) }

// Seed returns a copy of the 32-byte seed. Callers must not log it.
func (k *PrivateKey) Seed() []byte { return append([]byte(nil), k.priv.Seed()...) }

// Ed25519 returns the key as a crypto/ed25519 private key, for protocol code
// (MLS leaf signatures) that needs the raw type. Callers must not log it.
func (k *PrivateKey) Ed25519() ed25519.PrivateKey { return k.priv }

// String returns a redacted description naming only the DID.
func (k PrivateKey) String() string { return "did.PrivateKey(" + k.id.String() + ")" }

// GoString is like String, so that %#v cannot print the seed either.
func (k PrivateKey) GoString() string { return k.String() }

// LogValue implements slog.LogValuer and logs only the DID.
func (k PrivateKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// keyFile is the on-disk form of a private key.
type keyFile struct {
	Version int    `json:"version"`
	Type    string `json:"type"`
	DID     string `json:"did"`
	Seed    []byte `json:"seed"` // base64 in JSON
}

const keyFileType = "ed25519-seed"

// ErrNoKey is returned (wrapped) by LoadKey when the file does not exist.
var ErrNoKey = errors.New("did: no key file")

// ErrNotKeyFile is wrapped by the *KeyFileError of a path that is a
// directory or a file that does not parse as a key file.
var ErrNotKeyFile = errors.New("not a key file")

// KeyFileError is returned by LoadKey for a path that exists but is not a
// usable key file: a directory, a file others may read, or one that does
// not parse. Err says which (wrapping ErrNotKeyFile for the first and the
// last), and how to fix it where there is a fix.
type KeyFileError struct {
	Path string
	Err  error
}

func (e *KeyFileError) Error() string { return "did: key file " + e.Path + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *KeyFileError) Unwrap() error { return e.Err }

// MarshalKeyFile returns the key file form of k.
func MarshalKeyFile(k *PrivateKey) []byte {
	b, _ := json.MarshalIndent(keyFile{Version: 1, Type: keyFileType, DID: k.id.String(), Seed: k.priv.Seed()}, "", "  ")
	return append(b, '\n')
}

// ParseKeyFile parses the key file form and checks that the DID it records
// is the one its seed derives.
func ParseKeyFile(b []byte) (*PrivateKey, error) {
	k, reason := parseKeyFile(b)
	if reason != "" {
		return nil, errors.New("did: parsing key file: " + reason)
	}
	return k, nil
}

// parseKeyFile returns the key, or why b is not a key file.
func parseKeyFile(b []byte) (*PrivateKey, string) {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err.Error()
	}
	if f.Version != 1 || f.Type != keyFileType {
		return nil, fmt.Sprintf("unsupported version %d type %q", f.Version, f.Type)
	}
	k, err := NewKeyFromSeed(f.Seed)
	if err != nil {
		return nil, err.Error()
	}
	if f.DID != k.id.String() {
		return nil, "recorded DID does not match the key"
	}
	return k, ""
}

// LoadKey reads a key file written by SaveKey. A missing file returns an
// error wrapping ErrNoKey; a directory, a file that others can read and a
// file that does not parse return a *KeyFileError.
func LoadKey(path string) (*PrivateKey, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", ErrNoKey, path)
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf("%w: it is a directory", ErrNotKeyFile)}
	case !fi.Mode().IsRegular():
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf("%w: it is not a regular file", ErrNotKeyFile)}
	case fi.Mode().Perm()&0o077 != 0:
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf("has mode %v: others may read the key; want 0600 (chmod 600 %s)", fi.Mode().Perm(), path)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, reason := parseKeyFile(b)
	if reason != "" {
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf("%w: %s", ErrNotKeyFile, reason)}
	}
	return k, nil
}

// SaveKey writes k to path atomically with mode 0600: a temporary file in
// the same directory is written, synced and renamed over path, and the
// directory is synced, so a power cut leaves either the old file or the new
// one. It refuses to overwrite an existing file unless overwrite is set.
func SaveKey(path string, k *PrivateKey, overwrite bool) error {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("did: %s exists; refusing to overwrite a key", path)
		}
	}
	return atomicfile.WriteFile(path, MarshalKeyFile(k), 0o600)
}
