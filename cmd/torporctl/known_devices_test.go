package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
)

// TestKnownDevicesFollowRotation: a pin is recorded once, a file naming
// two DIDs for one name is an error naming both, and an ok rotate-keys
// reply signed by the pinned DID moves the pin to the new DID.
func TestKnownDevicesFollowRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torpor", "known_devices")
	k, err := command.LoadKnownDevices(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := did.Generate(nil)
	b, _ := did.Generate(nil)
	if err := k.Pin("pi-7", a.DID()); err != nil {
		t.Fatal(err)
	}
	s := &deviceSession{device: "pi-7", known: k}
	res, _ := json.Marshal(map[string]string{"old": a.DID().String(), "new": b.DID().String()})
	s.followRotation(&env{stderr: io.Discard}, command.Reply{Op: command.OpRotateKeys, Outcome: command.OutcomeOK, Device: a.DID().String(), Result: res})
	k, err = command.LoadKnownDevices(path)
	if pin, _ := k.Lookup("pi-7"); err != nil || pin != b.DID() {
		t.Fatalf("after rotate-keys the pin is %v (%v), want %s", pin, err, b.DID())
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("pi-7 " + a.DID().String() + "\n")
	f.Close()
	if _, err := command.LoadKnownDevices(path); err == nil || !strings.Contains(err.Error(), "two DIDs claim the device name pi-7") {
		t.Errorf("two DIDs for one name: %v", err)
	}
}
