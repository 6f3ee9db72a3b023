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
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
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
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: jsstore.StateStream, Subjects: []string{"torpor.qstate.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	_, err = jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if !errors.Is(err, jsstore.ErrDurability) || !strings.Contains(err.Error(), "memory") {
		t.Errorf("Open over a stream kept in memory = %v, want jsstore.ErrDurability", err)
	}
}

// TestBodiesExpireByTTL: a body is stored with a JetStream per-message
// TTL of the record's TTL plus jsstore.TTLGrace, so that no scan is
// needed to remove it; and a state entry whose body is gone is skipped
// by Next and dropped.
func TestBodiesExpireByTTL(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	q := c.Queue()
	b := queuebounds.Default()
	b.TTL = 2 * time.Hour
	r1 := queuetest.MustEnqueue(t, q, queuetest.Msg(queuetest.Alice, "one"), b, queuetest.T0)
	queuetest.MustEnqueue(t, q, queuetest.Msg(queuetest.Alice, "two"), b, queuetest.T0)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, jsstore.RecordsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Header.Get(jetstream.MsgTTLHeader), (b.TTL + jsstore.TTLGrace).String(); got != want || string(m.Data) != "one" {
		t.Errorf("first body %q has TTL %q, want %q", m.Data, got, want)
	}
	if err := s.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	rs, err := q.Next(ctx, queuetest.Agent, 0, 10, queuetest.T0)
	if err != nil || len(rs) != 1 || rs[0].Seq != r1.Seq+1 {
		t.Fatalf("Next after the first body vanished = %v, %v; want seq %d alone", rs, err, r1.Seq+1)
	}
	if st, _ := q.Stats(ctx, queuetest.Agent, queuetest.T0); st.Messages != 1 {
		t.Errorf("Stats after Next dropped the bodiless entry = %+v, want 1 message", st)
	}
}
