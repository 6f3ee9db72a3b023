package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/did"
)

// TestMQTTFlags: --operator, --operators-file, --mqtt-devices-file and
// --mqtt-public-url reach the embedded broker's configuration; a devices
// file closes enrolment; a bad DID is an error.
func TestMQTTFlags(t *testing.T) {
	dir := t.TempDir()
	k1, _ := did.Generate(nil)
	k2, _ := did.Generate(nil)
	ops := filepath.Join(dir, "operators")
	devs := filepath.Join(dir, "devices")
	os.WriteFile(ops, []byte("# ops\n"+k2.DID().String()+"\n"), 0o600)
	os.WriteFile(devs, []byte("pi-7 "+k1.DID().String()+"\n"), 0o600)
	a, err := parseArgs([]string{"--operator", k1.DID().String(), "--operators-file", ops, "--mqtt-devices-file", devs,
		"--mqtt-public-url", "mqtts://relay.example"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.mqtt.brokerConfig(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Operators) != 2 || cfg.Operators[0] != k1.DID() || cfg.Operators[1] != k2.DID() {
		t.Errorf("operators = %v", cfg.Operators)
	}
	if !cfg.Enrollment.Closed || cfg.Enrollment.Devices["pi-7"] != k1.DID() || len(cfg.Audiences) != 1 {
		t.Errorf("config = %+v", cfg)
	}
	a, _ = parseArgs([]string{"--operator", "did:key:nope"}, io.Discard)
	if _, err := a.mqtt.brokerConfig(dir, nil); err == nil {
		t.Error("a bad --operator was accepted")
	}
	os.WriteFile(devs, []byte("pi-7 "+k1.DID().String()+"\npi-7 "+k2.DID().String()+"\n"), 0o600)
	a, _ = parseArgs([]string{"--mqtt-devices-file", devs}, io.Discard)
	if _, err := a.mqtt.brokerConfig(dir, nil); err == nil {
		t.Error("two DIDs for one name were accepted")
	}
}
