package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
)

// TestStopIsLogged: an agent stopped by its service manager (the context
// of SIGTERM ends) logs one INFO line saying so, and no ERROR, also when
// its relay was never reached. Before, a journal just ended.
func TestStopIsLogged(t *testing.T) {
	dir := t.TempDir()
	k, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(key, k, false); err != nil {
		t.Fatal(err)
	}
	a, _, err := parseArgs([]string{"--key", key, "--data-dir", dir, "--relay", "http://127.0.0.1:1", "--mode", "always_on",
		"--purposes", "comms:*", "--handler", "comms:*=exec:/bin/cat"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logs runtimetest.Log
	done := make(chan error, 1)
	go func() { done <- daemon(ctx, a, &logs) }()
	for !strings.Contains(logs.String(), "torpor-agent starting") {
		select {
		case err := <-done:
			t.Fatalf("daemon ended before it started: %v\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	before := len(logs.String())
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("daemon = %v, want nil after a stop", err)
	}
	all := logs.String()
	if strings.Contains(all, "level=ERROR") {
		t.Errorf("the agent logged an ERROR:\n%s", all)
	}
	if stop := all[before:]; !strings.Contains(stop, `level=INFO msg="torpor-agent stopped" reason="context canceled"`) {
		t.Errorf("the stop logged %q, want the INFO line", stop)
	}
}
