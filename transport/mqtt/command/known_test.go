package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
)

// TestKnownDevices: a pin is recorded once and read back, a repin replaces
// it, and a file naming two DIDs for one name is an error naming both.
func TestKnownDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torpor", "known_devices")
	k, err := LoadKnownDevices(path)
	if err != nil || len(k.Devices()) != 0 {
		t.Fatalf("LoadKnownDevices(missing) = %v, %v", k.Devices(), err)
	}
	a, b := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID()
	if err := k.Pin("pi-7", a); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the pins file: %v, %v; want mode 0600", fi, err)
	}
	if err := k.Repin("pi-7", b); err != nil {
		t.Fatal(err)
	}
	k, err = LoadKnownDevices(path)
	if d, ok := k.Lookup("pi-7"); err != nil || !ok || d != b {
		t.Fatalf("after Repin, pi-7 is %v, %v (%v); want %s", d, ok, err, b)
	}
	if err := os.WriteFile(path, []byte("# pins\npi-7 "+a.String()+"\npi-7 "+b.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKnownDevices(path); err == nil || !strings.Contains(err.Error(), ":3: two DIDs claim the device name pi-7") {
		t.Errorf("two DIDs for one name: %v", err)
	}
	for _, bad := range []string{"pi-7\n", "pi/7 " + a.String() + "\n", "pi-7 did:key:nope\n"} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := LoadKnownDevices(path); err == nil || !strings.Contains(err.Error(), ":1: ") {
			t.Errorf("LoadKnownDevices(%q) = %v, want an error naming line 1", bad, err)
		}
	}
}

// TestSeqFile: numbers follow the clock, never go back when it steps
// back, are kept per device, and an explicit number is recorded as the
// last when it is greater.
func TestSeqFile(t *testing.T) {
	f := SeqFile{Path: filepath.Join(t.TempDir(), "op.key.seq")}
	a, b := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID()
	now := time.UnixMilli(5_000)
	steps := []struct {
		dev  string
		want uint64
		now  time.Time
		got  uint64
	}{
		{"a", 0, now, 5_000},
		{"a", 0, now, 5_001},                   // same millisecond
		{"a", 0, time.UnixMilli(1_000), 5_002}, // the clock stepped back
		{"b", 0, time.UnixMilli(1_000), 1_000}, // another device: its own sequence
		{"a", 9_000, now, 9_000},               // --seq
		{"a", 0, now, 9_001},                   // after --seq
		{"b", 10, time.UnixMilli(2_000), 10},   // a smaller --seq is used, not recorded
		{"b", 0, time.UnixMilli(1_000), 1_001},
	}
	for i, s := range steps {
		dev := a
		if s.dev == "b" {
			dev = b
		}
		got, err := f.Next(dev, s.want, s.now)
		if err != nil || got != s.got {
			t.Fatalf("step %d: Next(%s, %d, %d) = %d, %v; want %d", i, s.dev, s.want, s.now.UnixMilli(), got, err, s.got)
		}
	}
	os.WriteFile(f.Path, []byte("{"), 0o600)
	if _, err := f.Next(a, 0, now); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("Next on a damaged file = %v", err)
	}
}
