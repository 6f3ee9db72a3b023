package did

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Test identities of the reference vectors (testdata/vectors/atom/INDEX.md):
// RFC 8032 seeds 31×0x00 followed by 0x01 (Alice) and 0x02 (Bob).
const (
	aliceDID = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	alicePub = "TLWr9q15+/WrvMr8wmnYXNJlHtS4hbWGnyQa7fCluik="
	bobDID   = "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"
	bobPub   = "dCK5iHWYBo4yxESKlJrbKQ0PTjW54BsO5fGh5gD+JnQ="
)

func seed(last byte) []byte { s := make([]byte, 32); s[31] = last; return s }

func TestVectorIdentities(t *testing.T) {
	tests := []struct {
		name string
		seed []byte
		did  string
		pub  string
	}{
		{"alice", seed(1), aliceDID, alicePub},
		{"bob", seed(2), bobDID, bobPub},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewKeyFromSeed(tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.DID().String(); got != tt.did {
				t.Errorf("DID = %q, want %q", got, tt.did)
			}
			d, err := Parse(tt.did)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.did, err)
			}
			if got := base64.StdEncoding.EncodeToString(d.PublicKey()); got != tt.pub {
				t.Errorf("PublicKey = %s, want %s", got, tt.pub)
			}
			msg := []byte("message")
			if !d.Verify(msg, k.Sign(msg)) {
				t.Error("Verify of own signature failed")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []string{
		"",
		"did:web:example.com",
		"did:key:",
		"did:key:6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",   // no multibase prefix
		"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJ0",  // '0' not base58
		"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjV",    // truncated
		"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJGa", // too long
		"did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169", // P-256 multicodec
		"DID:KEY:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",
		"did:key:z1" + strings.Repeat("1", 60),
	}
	for _, s := range tests {
		if _, err := Parse(s); !errors.Is(err, ErrNotDIDKey) {
			t.Errorf("Parse(%q) = %v, want ErrNotDIDKey", s, err)
		}
	}
}

func TestMatchesKey(t *testing.T) {
	a := MustParse(aliceDID)
	b := MustParse(bobDID)
	if !a.MatchesKey(a.PublicKey()) {
		t.Error("alice does not match her own key")
	}
	if a.MatchesKey(b.PublicKey()) {
		t.Error("alice matches bob's key")
	}
	if a.MatchesKey(a.PublicKey()[:31]) {
		t.Error("alice matches a truncated key")
	}
}

func TestRedaction(t *testing.T) {
	k, _ := NewKeyFromSeed(bytes.Repeat([]byte{0xab}, 32))
	secretHex := fmt.Sprintf("%x", k.Seed())
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("key", "k", k)
	outs := []string{
		fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), fmt.Sprintf("%v", *k), buf.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, secretHex) || strings.Contains(o, "171 171") || strings.Contains(o, "abab") {
			t.Errorf("output leaks the seed: %s", o)
		}
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.key")
	k, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := SaveKey(path, k, false); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	if err := SaveKey(path, k, false); err == nil {
		t.Error("SaveKey overwrote an existing key")
	}
	k2, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k2.DID() != k.DID() {
		t.Errorf("loaded DID %v, want %v", k2.DID(), k.DID())
	}
	os.Chmod(path, 0o644)
	if _, err := LoadKey(path); err == nil {
		t.Error("LoadKey accepted a world-readable key")
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); !errors.Is(err, ErrNoKey) {
		t.Errorf("LoadKey(missing) = %v, want ErrNoKey", err)
	}
	bad := bytes.Replace(MarshalKeyFile(k), []byte(k.DID().String()), []byte(bobDID), 1)
	if _, err := ParseKeyFile(bad); err == nil {
		t.Error("ParseKeyFile accepted a file whose DID does not match its seed")
	}
	// What is not a usable key file is a *KeyFileError naming the path;
	// a directory, a device and a file that does not parse are also
	// ErrNotKeyFile.
	badFile := filepath.Join(dir, "bad.key")
	os.WriteFile(badFile, bad, 0o600)
	for _, tt := range []struct {
		path, want string
		notKey     bool
	}{
		{path, "did: key file " + path + ": has mode -rw-r--r--: others may read the key; want 0600 (chmod 600 " + path + ")", false},
		{dir, "did: key file " + dir + ": not a key file: it is a directory", true},
		{os.DevNull, "did: key file " + os.DevNull + ": not a key file: it is not a regular file", true},
		{badFile, "did: key file " + badFile + ": not a key file: recorded DID does not match the key", true},
	} {
		_, err := LoadKey(tt.path)
		var ke *KeyFileError
		if !errors.As(err, &ke) || ke.Path != tt.path || err.Error() != tt.want || errors.Is(err, ErrNotKeyFile) != tt.notKey {
			t.Errorf("LoadKey(%s) = %v, want %q (ErrNotKeyFile %v)", tt.path, err, tt.want, tt.notKey)
		}
	}
}
