//go:build integration

package hostile

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// The device side of the hostile cases against the real torpor-agent binary:
// stores that fail closed (exit status 65, nothing changed, the fix
// named), bounds on every number of the configuration, duplicate members,
// relative handler paths, a relay that is not http(s), and SIGTERM during
// the making of KeyPackages.

// agExitStore is torpor-agent's exit status for a refused store
// (cmd/torpor-agent ExitStore).
const agExitStore = 65

// agBinary is the torpor-agent binary, built once per test binary.
func agBinary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "torpor-agent")
}

// agDevice is one device's files: its key, the store marker next to it,
// its data directory and a configuration file.
type agDevice struct {
	t      *testing.T
	dir    string
	key    string
	data   string
	db     string
	config string
}

func agNewDevice(t *testing.T) *agDevice {
	t.Helper()
	dir := t.TempDir()
	d := &agDevice{t: t, dir: dir, key: filepath.Join(dir, "keys", "agent.key"), data: filepath.Join(dir, "data"),
		config: filepath.Join(dir, "agent.json")}
	d.db = filepath.Join(d.data, runtime.DBFile)
	if err := os.MkdirAll(filepath.Dir(d.key), 0o700); err != nil {
		t.Fatal(err)
	}
	k, err := did.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if err := did.SaveKey(d.key, k, false); err != nil {
		t.Fatal(err)
	}
	d.writeConfig(`{"version": 1}`)
	return d
}

func (d *agDevice) writeConfig(body string) {
	d.t.Helper()
	if err := os.WriteFile(d.config, []byte(body), 0o600); err != nil {
		d.t.Fatal(err)
	}
}

// args are the daemon's flags for d; a relay nobody listens on keeps the
// agent retrying inside its wake until it is stopped.
func (d *agDevice) args(extra ...string) []string {
	return append([]string{"--config", d.config, "--key", d.key, "--data-dir", d.data, "--relay", "http://127.0.0.1:9",
		"--purposes", "comms:*", "--handler", "comms:*=exec:/bin/true", "--mode", "always_on"}, extra...)
}

// agResult is how a run of the binary ended.
type agResult struct {
	code   int
	stderr string
}

// run runs the binary to its end (it must end by itself within 60 s).
func (d *agDevice) run(argv ...string) agResult {
	d.t.Helper()
	cmd := exec.Command(agBinary(d.t), argv...)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		d.t.Fatalf("torpor-agent %q did not end within 60 s; stderr:\n%s", argv, stderr.String())
	}
	return agResult{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
}

// runUntil starts the daemon, waits (real time: a real process) until it
// logged that it started and ready reports true, sends SIGTERM and
// returns how it ended.
func (d *agDevice) runUntil(ready func() bool, argv ...string) agResult {
	d.t.Helper()
	cmd := exec.Command(agBinary(d.t), argv...)
	stderr := &runtimetest.Log{} // the process writes while the test reads
	cmd.Stderr, cmd.Stdout = stderr, io.Discard
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "torpor-agent starting") || !ready() {
		select {
		case <-done:
			d.t.Fatalf("torpor-agent ended before it was ready: %v\n%s", cmd.ProcessState, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			d.t.Fatalf("torpor-agent not ready within 60 s; stderr:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		d.t.Fatalf("torpor-agent did not stop within 30 s of SIGTERM; stderr:\n%s", stderr.String())
	}
	return agResult{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ranBefore runs the daemon until it made its store and the marker, and
// stops it: the device has run before.
func (d *agDevice) ranBefore() {
	d.t.Helper()
	marker := d.key + runtime.MarkerSuffix
	r := d.runUntil(func() bool { return exists(marker) }, d.args()...)
	if r.code != 0 {
		d.t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	if fi, err := os.Stat(d.db); err != nil || fi.Size() == 0 {
		d.t.Fatalf("first run left no store: %v", err)
	}
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func (r agResult) want(t *testing.T, code int, says ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
	for _, s := range says {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stderr does not say %q:\n%s", s, r.stderr)
		}
	}
}
