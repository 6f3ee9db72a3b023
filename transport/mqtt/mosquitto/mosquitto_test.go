package mosquitto

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestHash checks Hash against a vector computed with Python's
// hashlib.pbkdf2_hmac("sha512", b"correct horse", bytes(range(12)), 101, 64),
// an implementation independent of Go's.
func TestHash(t *testing.T) {
	salt := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	got, err := Hash("correct horse", salt)
	want := "$7$101$AAECAwQFBgcICQoL$lp0Cm29zl+CI/RXyXDKvLye7OxM3OuE6RMzgXTX/f3imS/pFh2Ur7yarLDpKRUKpB0tOj6l0UrRv41zqxmD4tg=="
	if err != nil || got != want {
		t.Errorf("Hash = %q, %v; want %q", got, err, want)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	dev, op := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID()
	f := Fleet{Prefix: "torpor/v1", Devices: map[string]did.DID{"pump": dev}, Operators: []did.DID{op},
		Rand: bytes.NewReader(make([]byte, 1024))}
	if err := Write(dir, f); err != nil {
		t.Fatal(err)
	}
	devUser, opUser := strings.TrimPrefix(dev.String(), "did:key:"), strings.TrimPrefix(op.String(), "did:key:")
	wantACL := "user " + devUser + "\ntopic read torpor/v1/pump/cmd\ntopic readwrite torpor/v1/pump/sync\n" +
		"topic write torpor/v1/pump/status\ntopic write torpor/v1/pump/reply\ntopic write torpor/v1/pump/event\n\n" +
		"user " + opUser + "\ntopic write torpor/v1/+/cmd\ntopic read torpor/v1/+/reply\n" +
		"topic read torpor/v1/+/status\ntopic read torpor/v1/+/event\n"
	if got := read(t, dir, "acl"); got != wantACL {
		t.Errorf("acl =\n%s\nwant\n%s", got, wantACL)
	}
	// The secrets come from Rand (zeros); each line hashes its own secret.
	secret := strings.TrimSpace(read(t, dir, "secrets/device-pump.password"))
	if secret != strings.Repeat("A", 32) {
		t.Errorf("device secret = %q", secret)
	}
	h, _ := Hash(secret, make([]byte, 12))
	if passwd := read(t, dir, "passwd"); !strings.Contains(passwd, devUser+":"+h+"\n") || !strings.Contains(passwd, opUser+":$7$101$") {
		t.Errorf("passwd =\n%s\nwant the device's line %s:%s and the operator's", passwd, devUser, h)
	}
	if conf := read(t, dir, "mosquitto.conf"); !strings.Contains(conf, "allow_anonymous false\n") || !strings.Contains(conf, "acl_file "+filepath.Join(dir, "acl")+"\n") {
		t.Errorf("mosquitto.conf =\n%s", conf)
	}
	// A second run keeps the passwords.
	if err := os.WriteFile(filepath.Join(dir, "secrets", "device-pump.password"), []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Rand = bytes.NewReader(make([]byte, 1024))
	if err := Write(dir, f); err != nil {
		t.Fatal(err)
	}
	if h, _ := Hash("kept", make([]byte, 12)); !strings.Contains(read(t, dir, "passwd"), devUser+":"+h+"\n") {
		t.Errorf("a second run did not keep the device's password")
	}
}

func TestWriteRefusesADIDTwice(t *testing.T) {
	d := didtest.Key(t, 1).DID()
	tests := []Fleet{
		{Prefix: "p", Devices: map[string]did.DID{"a": d, "b": d}},
		{Prefix: "p", Devices: map[string]did.DID{"a": d}, Operators: []did.DID{d}},
	}
	for _, f := range tests {
		if err := Write(t.TempDir(), f); err == nil || !strings.Contains(err.Error(), "is both") {
			t.Errorf("Write(%v) = %v, want an error naming the DID twice", f, err)
		}
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
