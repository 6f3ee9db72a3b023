package jsstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestOpenRefusesWeakDurability: Open refuses, naming the setting, every
// configuration that cannot promise that an acknowledged write survives a
// crash: one replica on a server that does not fsync every write, one
// replica without a way to check, three replicas without a cluster, and
// existing streams with fewer replicas than asked.
func TestOpenRefusesWeakDurability(t *testing.T) {
	lazy, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: false})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{lazy}) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		name string
		cfg  jsstore.Config
		want string
	}{
		{"R1 without fsync on every write", jsstore.Config{Replicas: 1, MonitorURL: lazy.MonitorURL()}, "sync_interval: always"},
		{"R1 unchecked", jsstore.Config{Replicas: 1}, "monitoring URL"},
		{"R3 on one server", jsstore.Config{Replicas: 3}, "cluster of at least 3"},
	}
	for _, tt := range tests {
		tt.cfg.URLs = []string{lazy.URL()}
		_, err := jsstore.Open(ctx, tt.cfg)
		if !errors.Is(err, jsstore.ErrDurability) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open = %v, want jsstore.ErrDurability naming %q", tt.name, err, tt.want)
		}
	}
	srv := single(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: jsstore.RecordsStream, Subjects: []string{"torpor.qrec.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	_, err = jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if !errors.Is(err, jsstore.ErrDurability) || !strings.Contains(err.Error(), "memory") {
		t.Errorf("Open over a stream kept in memory = %v, want jsstore.ErrDurability", err)
	}
}
