package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestUpdatesOnJetStream: with --store jetstream and the update keys the
// relay hosts the repository in JetStream (the object store bucket
// TORPOR_UPDATES appears; no updates.db in the data directory), and a
// bound that is not a positive number of bytes is refused, naming the
// flag.
func TestUpdatesOnJetStream(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	keys := t.TempDir()
	var files []string
	for _, name := range []string{"snapshot.key", "timestamp.key"} {
		k, err := did.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(keys, name))
		if err := did.SaveKey(files[len(files)-1], k, false); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := t.TempDir()
	flags := []string{"--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL(),
		"--update-snapshot-key", files[0], "--update-timestamp-key", files[1]}
	if _, err := startRelay(t, append(flags, "--data-dir", dataDir)...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "updates.db")); err == nil {
		t.Error("updates.db made in the data directory on --store jetstream")
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.ObjectStore(t.Context(), "TORPOR_UPDATES"); err != nil {
		t.Errorf("the object store TORPOR_UPDATES on the server: %v", err)
	}
	_, err = startRelay(t, append(flags, "--updates-max-bytes", "0")...)
	if err == nil || !strings.Contains(err.Error(), "--updates-max-bytes 0") {
		t.Errorf("--updates-max-bytes 0 = %v; want a refusal naming it", err)
	}
}
