package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

func TestStoreFlags(t *testing.T) {
	tests := []struct {
		argv    []string
		wantErr string
	}{
		{[]string{"--store", "jetstream"}, "--store jetstream needs --nats URL"},
		{[]string{"--nats", "nats://127.0.0.1:4222"}, "--nats needs --store jetstream"},
		{[]string{"--store", "etcd"}, `--store "etcd": want bolt or jetstream`},
		{[]string{"--queue-engine", "lsm"}, `--queue-engine "lsm": want bolt or log`},
		{[]string{"--store", "jetstream", "--nats", "nats://a:4222", "--queue-engine", "log"}, "--queue-engine needs --store bolt"},
		{[]string{"--store", "jetstream", "--nats", "nats://a:4222", "--reinitialise"}, "--reinitialise needs --store bolt (JetStream keeps no files in --data-dir)"},
	}
	for _, tt := range tests {
		if _, err := parseArgs(tt.argv, io.Discard); err == nil || err.Error() != tt.wantErr {
			t.Errorf("parseArgs(%q) = %v, want %q", tt.argv, err, tt.wantErr)
		}
	}
	if a, err := parseArgs(nil, io.Discard); err != nil || a.store.queueEngine != "log" {
		t.Errorf("the default queue engine = %q, %v; want log", a.store.queueEngine, err)
	}
	a, err := parseArgs([]string{"--store", "jetstream", "--nats", "nats://a:4222,nats://b:4222", "--nats", "nats://c:4222"}, io.Discard)
	if err != nil || strings.Join(a.store.nats.URLs, " ") != "nats://a:4222 nats://b:4222 nats://c:4222" || a.store.nats.Replicas != 3 || a.store.nats.Prefix != "TORPOR" {
		t.Errorf("parseArgs(--store jetstream --nats a,b --nats c) = %+v, %v; want three URLs, 3 replicas, prefix TORPOR", a.store.nats, err)
	}
}

// startRelay runs the relay with argv (plus loopback listeners) and
// returns its HTTP address, or the error run ended with.
func startRelay(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	r, err := startRun(t, t.TempDir(), argv...)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("run = %v", err)
		}
	})
	return r.http, nil
}

// TestRunJetStream: --store jetstream serves from a JetStream server that
// fsyncs every write, and refuses to start, naming the setting, on one
// that does not.
func TestRunJetStream(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	addr, err := startRelay(t, "--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL())
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	json.NewDecoder(r.Body).Decode(&h)
	r.Body.Close()
	if h["status"] != "ok" {
		t.Errorf("healthz = %v", h)
	}

	lazy, err := jsserver.Start(t.TempDir(), jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{lazy}) })
	_, err = startRelay(t, "--store", "jetstream", "--nats", lazy.URL(), "--nats-replicas", "1", "--nats-monitor", lazy.MonitorURL())
	if err == nil || !strings.Contains(err.Error(), "sync_interval: always") || !strings.Contains(err.Error(), "--store jetstream") {
		t.Errorf("run against a server without fsync on every write = %v, want a refusal naming sync_interval: always", err)
	}
	_, err = startRelay(t, "--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL(), "--max-messages", "100000")
	if err == nil || !strings.Contains(err.Error(), "--max-messages 100000") || !strings.Contains(err.Error(), "max_payload") {
		t.Errorf("run with --max-messages 100000 = %v, want a refusal naming --max-messages and max_payload", err)
	}
	_, err = startRelay(t, "--store", "jetstream", "--nats", lazy.URL())
	if err == nil || !strings.Contains(err.Error(), "--nats-replicas 3") || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("run with 3 replicas on one server = %v, want a refusal naming the replicas and the cluster", err)
	}
}

// TestRunJetStreamNewDataDir: on JetStream the relay starts with a
// --data-dir that does not exist yet, and creates it (0700) for the
// embedded broker's files, as the bbolt stores do (store.Open).
func TestRunJetStreamNewDataDir(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	dir := filepath.Join(t.TempDir(), "new", "relay")
	if _, err := startRelay(t, "--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL(), "--data-dir", dir); err != nil {
		t.Fatalf("run with a --data-dir that does not exist = %v, want it started", err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("--data-dir after the start: %v, %v; want a directory with mode 0700", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mqtt.db")); err != nil {
		t.Errorf("the embedded broker's mqtt.db: %v", err)
	}
}

// TestQueueEngine: --queue-engine log keeps the queue in queue.log/ and
// imports queue.db; the bolt engine then refuses to start rather than
// serve an empty queue.db beside the records in the log.
func TestQueueEngine(t *testing.T) {
	dir := t.TempDir()
	q, err := openQueue(dir, "bolt", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r, err := q.Enqueue(context.Background(), queue.Record{Agent: "did:key:a", Body: []byte("x")}, queuebounds.Default(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	if q, err = openQueue(dir, "log", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	rs, err := q.Next(context.Background(), "did:key:a", 0, 10, r.EnqueuedAt)
	q.Close()
	if err != nil || len(rs) != 1 || rs[0].Seq != r.Seq {
		t.Errorf("the log engine after the bolt one: Next = %v, %v; want the record bolt queued", rs, err)
	}
	if _, err := openQueue(dir, "bolt", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--queue-engine log") {
		t.Errorf("the bolt engine beside a record log = %v, want a refusal naming --queue-engine log", err)
	}
	if _, err := startRelay(t, "--queue-engine", "log"); err != nil {
		t.Errorf("the relay with --queue-engine log: %v", err)
	}
}

// TestDefaultEngineMigratesBolt: a relay that ran on --queue-engine bolt,
// started again without the flag, imports its queue.db into the record
// log (the default) once, keeping queue.db as queue.db.imported, and
// serves its records.
func TestDefaultEngineMigratesBolt(t *testing.T) {
	dir := t.TempDir()
	if logs, err := runOn(t, dir, "--queue-engine", "bolt"); err != nil {
		t.Fatalf("start on bolt: %v\n%s", err, logs)
	}
	q, err := queue.OpenBolt(filepath.Join(dir, queue.BoltFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := q.Enqueue(context.Background(), queue.Record{Agent: "did:key:a", Body: []byte("from bolt")}, queuebounds.Default(), time.Now())
	q.Close()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if logs, err := runOn(t, dir); err != nil {
			t.Fatalf("start with the default engine: %v\n%s", err, logs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, queue.BoltFile+".imported")); err != nil {
		t.Errorf("queue.db was not kept as queue.db.imported: %v", err)
	}
	s, err := queue.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, isLog := s.(*queue.Log); !isLog {
		t.Errorf("the data directory holds a %T, want the record log", s)
	}
	rs, err := s.Next(context.Background(), "did:key:a", 0, 10, r.EnqueuedAt)
	if err != nil || len(rs) != 1 || string(rs[0].Body) != "from bolt" {
		t.Errorf("after the migration: Next = %v, %v; want the record bolt queued", rs, err)
	}
}

// TestQueueSegmentSize: --queue-segment-size makes the record log start new
// segment files at that size (the power-cut test uses it to cut the power
// while segments rotate); with the bolt engine it is refused.
func TestQueueSegmentSize(t *testing.T) {
	dir := t.TempDir()
	q, err := openQueueSized(dir, "log", 4096, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := q.Enqueue(context.Background(), queue.Record{Agent: "did:key:a", Body: make([]byte, 1024)}, queuebounds.Default(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	q.Close()
	segs, err := filepath.Glob(filepath.Join(dir, "queue.log", "*.log"))
	if err != nil || len(segs) < 4 {
		t.Errorf("20 records of 1 KiB in 4 KiB segments: %d segment files (%v), want at least 4", len(segs), err)
	}
	if _, err := parseArgs([]string{"--queue-engine", "bolt", "--queue-segment-size", "4096"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--queue-segment-size") {
		t.Errorf("--queue-segment-size with the bolt engine = %v, want a refusal naming it", err)
	}
}
