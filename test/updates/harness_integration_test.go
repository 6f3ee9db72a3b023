//go:build integration

package updates

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// The builds: two of torpor-agent stamped with versions (the packaged one
// is the launcher), and the two broken ones of testdata.
const (
	v1, v2 = "1.0.0", "2.0.0"
	crash  = "crash"
	hang   = "hang"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// bin returns the build named v1, v2, crash or hang, building all four
// once per test binary.
func bin(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "torpor-updates"); buildErr != nil {
			return
		}
		for _, b := range [][]string{
			{v1, "-ldflags=-X github.com/torpor-dev/torpor/internal/version.stamp=" + v1, "./cmd/torpor-agent"},
			{v2, "-ldflags=-X github.com/torpor-dev/torpor/internal/version.stamp=" + v2, "./cmd/torpor-agent"},
			{crash, "-trimpath", "./test/updates/testdata/crash"},
			{hang, "-trimpath", "./test/updates/testdata/hang"},
		} {
			cmd := exec.Command(testenv.RequireTool(t, "go"), "build", "-o", filepath.Join(buildDir, b[0]), b[1], b[2])
			cmd.Dir, cmd.Env = testenv.Root(), append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{err, string(out)}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("building: %v", buildErr)
	}
	return filepath.Join(buildDir, name)
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// device is one agent on a real relay, installed as the .deb installs it:
// the v1 build is the packaged binary, started as the systemd unit starts
// it (--slot-launch), with its slots under its data directory.
type device struct {
	t     *testing.T
	dir   string
	flags []string
	// data is the agent's data directory; "" means dir's "agent".
	data string
	// packaged is the packaged binary the unit starts; "" means the v1
	// build.
	packaged string
}

// trialDeadline is the device's "update.trialDeadline": long enough for a
// loaded machine to start, link and drain, short enough for the test.
const trialDeadline = 8 * time.Second

func newDevice(t *testing.T) *device {
	t.Helper()
	dir := t.TempDir()
	relay := relaytest.Start(t, filepath.Join(dir, "relay"))
	key := didtest.New(t)
	keyFile, conf := testenv.KeyFile(t, key), filepath.Join(dir, "agent.json")
	c := map[string]any{"version": 1, "update": map[string]any{"trialStarts": 2, "trialDeadline": trialDeadline.String()}}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &device{t: t, dir: dir, flags: []string{"--config", conf, "--key", keyFile, "--data-dir", filepath.Join(dir, "agent"),
		"--relay", relay.URL, "--mode", "always_on", "--name", "plot-7", "--purposes", "comms:*", "--handler", "*=exec:/bin/true"}}
}

// install runs the packaged binary's "slots install" of build as version.
func (d *device) install(build, version string) {
	d.t.Helper()
	args := append([]string{"slots", "install", "--build-version", version}, d.flags...)
	out, err := exec.Command(bin(d.t, v1), append(args, bin(d.t, build))...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("slots install %s: %v\n%s", build, err, out)
	}
}

// state reads the slots' state file as the launcher does.
func (d *device) state() slots.State {
	d.t.Helper()
	data := d.data
	if data == "" {
		data = filepath.Join(d.dir, "agent")
	}
	st, err := slots.New(filepath.Join(data, "slots"), nil).Load()
	if err != nil {
		d.t.Fatal(err)
	}
	return st
}

// proc is one start of the unit: the launcher and whatever it runs, in a
// process group of their own (systemd's KillMode=control-group), its
// output kept.
type proc struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	out     bytes.Buffer
	changed chan struct{}
	done    chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.changed)
	p.changed = make(chan struct{})
	return p.out.Write(b)
}

// start starts the unit once.
func (d *device) start() *proc {
	d.t.Helper()
	packaged := d.packaged
	if packaged == "" {
		packaged = bin(d.t, v1)
	}
	return startProc(d.t, exec.Command(packaged, append([]string{"--slot-launch"}, d.flags...)...))
}

// startProc starts cmd in a process group of its own, its output kept by
// the proc, and kills the group when the test ends.
func startProc(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	return p
}

// kill is SIGKILL to the whole group, as a power cut stops everything.
func (p *proc) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// stop is systemctl stop: SIGTERM to the group, then the wait.
func (p *proc) stop(t *testing.T) {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not stop in 30 s:\n%s", p.log())
	}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait returns the first match of re in the output, or nil when the
// process ended without one; a minute without either fails the test.
func (p *proc) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	limit := time.After(time.Minute)
	for {
		p.mu.Lock()
		m, changed := re.FindStringSubmatch(p.out.String()), p.changed
		p.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.done:
			if m := re.FindStringSubmatch(p.log()); m != nil {
				return m
			}
			return nil
		case <-limit:
			t.Fatalf("no line matching %s in a minute:\n%s", re, p.log())
		}
	}
}

var startingRE = regexp.MustCompile(`msg="torpor-agent starting" version=(\S+) slot=(\S*)`)

// boot starts the unit as systemd does with Restart=on-failure, until an
// agent starts; it returns that start, its version and slot, and the
// output of the failed starts before it.
func (d *device) boot() (p *proc, version, slot string, failed []string) {
	d.t.Helper()
	for range 6 {
		p = d.start()
		if m := p.wait(d.t, startingRE); m != nil {
			return p, m[1], strings.Trim(m[2], `"`), failed
		}
		if p.cmd.ProcessState.ExitCode() == 0 {
			d.t.Fatalf("a start ended cleanly before the agent started:\n%s", p.log())
		}
		failed = append(failed, p.log())
	}
	d.t.Fatalf("no agent after 6 starts:\n%s", failed)
	return
}
