package procs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/deliver"
)

// TestProc runs a real child process writing slog lines and other text,
// awaits a line, and stops the process with SIGTERM.
func TestProc(t *testing.T) {
	dir := t.TempDir()
	script := `echo 'time=2026-12-02T15:23:01.666Z level=INFO msg="torpor-relay listening" addr=http://127.0.0.1:1'; echo 'not slog'; exec sleep 60`
	p, err := StartProc("child", "/bin/sh", []string{"-c", script}, dir, filepath.Join(dir, "child.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, _, err := p.Out().Await(ctx, 0, func(l Line) bool { return l.Msg == "torpor-relay listening" })
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Get("addr"); got != "http://127.0.0.1:1" {
		t.Errorf("addr = %q", got)
	}
	if _, _, err := p.Out().Await(ctx, 0, func(l Line) bool { return l.Raw == "not slog" }); err != nil {
		t.Errorf("awaiting a raw line: %v", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Errorf("Stop = %v, want nil (SIGTERM is a clean stop)", err)
	}
	if _, _, err := p.Out().Await(ctx, p.Out().Len(), func(Line) bool { return true }); err != errClosed {
		t.Errorf("Await after exit = %v, want errClosed", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.log"))
	if err != nil || !strings.Contains(string(b), "not slog") {
		t.Errorf("log file = %q, %v", b, err)
	}
}

// TestProcKilled: a process that ignores SIGTERM is killed after the grace
// period and reported.
func TestProcKilled(t *testing.T) {
	dir := t.TempDir()
	p, err := StartProc("stubborn", "/bin/sh", []string{"-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`}, dir, filepath.Join(dir, "log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := p.Out().Await(ctx, 0, func(l Line) bool { return l.Raw == "ready" }); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(200 * time.Millisecond); err == nil {
		t.Error("Stop = nil for a process that ignored SIGTERM, want an error")
	}
	select {
	case <-p.Done():
	default:
		t.Error("Stop returned before the process exited")
	}
}

// TestSink posts through the agent's real Unix-socket hand-off.
func TestSink(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "app.sock")
	got := make(chan Received, 1)
	s, err := StartSink(sock, func(r Received) { got <- r })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := deliver.NewUnix(sock, "/action", nil)
	o, err := h.Deliver(context.Background(), deliver.Delivery{Object: []byte(`{}`), ObjectID: "id-1", Purpose: "action:x", IdempotencyKey: "k"})
	if err != nil || !o.OK {
		t.Fatalf("Deliver = %+v, %v", o, err)
	}
	if o.EffectID != "demo-app-1" {
		t.Errorf("effect id = %q, want demo-app-1", o.EffectID)
	}
	r := <-got
	if r.Path != "/action" || r.ObjectID != "id-1" || r.IdempotencyKey != "k" {
		t.Errorf("received %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Await(ctx, func(r Received) bool { return r.ObjectID == "id-1" }); err != nil {
		t.Errorf("Await = %v", err)
	}
}
