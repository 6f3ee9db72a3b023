package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
)

// TestMQTTACLFlagsFirst: mqtt's subcommand acl may follow the flags.
func TestMQTTACLFlagsFirst(t *testing.T) {
	dir := t.TempDir()
	devices, operators, out := filepath.Join(dir, "devices"), filepath.Join(dir, "operators"), filepath.Join(dir, "out")
	if err := os.WriteFile(devices, []byte("dev-1 "+didtest.Key(t, 1).DID().String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(operators, []byte(didtest.Key(t, 2).DID().String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if code := run(context.Background(), []string{"mqtt", "--devices", devices, "--operators", operators, "acl", "--out", out}, &b, &b); code != 0 {
		t.Fatalf("mqtt --devices F --operators F acl --out D: exit %d\n%s", code, b.String())
	}
	for _, f := range []string{"passwd", "acl", "mosquitto.conf"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
