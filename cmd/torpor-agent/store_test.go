package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/store/storetest"
)

// refusedArgs seeds a store and its key, with the store marker a run
// leaves, and returns the daemon's flags and the store's path.
func refusedArgs(t *testing.T) ([]string, string) {
	dir := t.TempDir()
	data, key := filepath.Join(dir, "data"), filepath.Join(dir, "agent.key")
	if err := seedStore(data, key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.json"), []byte(`{"version": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key+runtime.MarkerSuffix, []byte(`{"store":"x","created":"2026-01-15T14:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", filepath.Join(dir, "agent.json"), "--key", key, "--data-dir", data, "--relay", "http://127.0.0.1:1",
		"--purposes", "comms:*", "--handler", "comms:*=exec:/bin/true"}, filepath.Join(data, runtime.DBFile)
}

// TestRefusedStoreExitStatus: a corrupt store, and a missing one after
// the device ran before, end the daemon with ExitStore and the fix; the
// operator commands refuse a corrupt store too.
func TestRefusedStoreExitStatus(t *testing.T) {
	args, db := refusedArgs(t)
	if err := storetest.GarbagePage(db); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run(args, &bytes.Buffer{}, &stderr); code != ExitStore || !strings.Contains(stderr.String(), db+" is corrupt") {
		t.Fatalf("corrupt store: exit %d, stderr %q; want %d naming %s", code, stderr.String(), ExitStore, db)
	}
	stderr.Reset()
	if code := run(append([]string{"status"}, args...), &bytes.Buffer{}, &stderr); code == 0 || !strings.Contains(stderr.String(), "is corrupt") {
		t.Fatalf("status on a corrupt store: exit %d, stderr %q", code, stderr.String())
	}
	os.Remove(db)
	stderr.Reset()
	if code := run(args, &bytes.Buffer{}, &stderr); code != ExitStore || !strings.Contains(stderr.String(), "--reinitialise") {
		t.Fatalf("missing store after a run: exit %d, stderr %q; want %d and --reinitialise", code, stderr.String(), ExitStore)
	}
}

// TestUnitPreventsRestartOnRefusedStore: the systemd unit does not restart
// the agent after it exited with ExitStore.
func TestUnitPreventsRestartOnRefusedStore(t *testing.T) {
	b, err := os.ReadFile("../../packaging/systemd/torpor-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RestartPreventExitStatus=(.*)$`).FindSubmatch(b)
	if m == nil || !strings.Contains(" "+string(m[1])+" ", " "+strconv.Itoa(ExitStore)+" ") {
		t.Fatalf("torpor-agent.service: RestartPreventExitStatus %q does not list %d", m, ExitStore)
	}
}
