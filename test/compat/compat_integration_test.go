//go:build integration

package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// previous is the release this tree must work with (testenv's
// PreviousRelease, moved forward at each release: docs/upgrades.md).
const previous = testenv.PreviousRelease

// commands are the binaries a demo runs.
var commands = []string{"torpor-demo", "torpor-relay", "torpor-agent", "torporctl"}

// events are lines of the previous release's demo that need the device and
// the relay to understand each other: queued while asleep, linked and
// drained, MLS applied, objects accepted and rejected, a held action
// confirmed over MQTT and the device's signed reply.
var events = []struct{ name, re string }{
	{"queued for a sleeping agent", `sender\s+503\s+→ hourly: .* 503 agent_asleep, queued:true, Retry-After \d+ s`},
	{"the drain", `hourly\s+drain\s+drain: [1-9]\d* record\(s\) pulled and acknowledged, 1 MLS handshake\(s\) applied`},
	{"the queue drained", `relay\s+queue\s+queue depth \(from /metrics\): hourly 0 · sleeper 0 · always 0`},
	{"accepted objects", `hourly\s+accept\s+accepted and delivered comms:message`},
	{"a live answer", `sender\s+live\s+→ always: .* 200, answered live`},
	{"rejected: forged signature", `hourly\s+reject\s+rejected seq \d+: signature-invalid`},
	{"a held action", `hourly\s+hold\s+held for the owner .*action:open-valve`},
	{"the confirmed action ran", `hourly\s+confirm\s+ran action:open-valve after the owner's confirmation`},
	{"the device's signed reply", `hourly\s+mqtt\s+reply to the owner's confirm \(seq \d+\), signed by hourly: ok`},
	{"the end", `demo OK in \d+\.\d s`},
}

// TestPreviousAgentNewRelay runs the previous release's demo with this
// tree's relay: devices and senders not yet upgraded, the relay upgraded.
func TestPreviousAgentNewRelay(t *testing.T) {
	old := testenv.BuildAt(t, previous, commands...)
	bin := mixed(t, old, map[string]string{"torpor-relay": testenv.Binary(t, "torpor-relay")})
	runDemo(t, bin)
}

// TestNewAgentPreviousRelay runs the previous release's demo with this
// tree's agent: devices upgraded first, the relay not yet.
func TestNewAgentPreviousRelay(t *testing.T) {
	old := testenv.BuildAt(t, previous, commands...)
	bin := mixed(t, old, map[string]string{"torpor-agent": testenv.Binary(t, "torpor-agent")})
	runDemo(t, bin)
}

// mixed returns a directory of the binaries in dir, with the ones named in
// replace taken from the given paths instead.
func mixed(t *testing.T, dir string, replace map[string]string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range commands {
		src := filepath.Join(dir, name)
		if p, ok := replace[name]; ok {
			src = p
		}
		if err := os.Symlink(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// runDemo runs torpor-demo from bin with bin's binaries and checks that it
// succeeded and told the events above.
func runDemo(t *testing.T, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "torpor-demo"), "-bin", bin, "-dir", filepath.Join(t.TempDir(), "run"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing may outlive the demo
	if err != nil {
		t.Errorf("torpor-demo = %v, want exit status 0", err)
	}
	for _, e := range events {
		if !regexp.MustCompile(e.re).Match(out.Bytes()) {
			t.Errorf("event %q not in the output (want a line matching %s)", e.name, e.re)
		}
	}
	if t.Failed() {
		t.Logf("torpor-demo output:\n%s", out.String())
	}
}
