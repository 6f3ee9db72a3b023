package testenv

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildMu  sync.Mutex
	binDir   string
	binBuilt = map[string]error{}
)

// Binary builds ./cmd/<name> of this repository (torpor-relay,
// torpor-agent, torporctl) once per test binary, with CGO_ENABLED=0 as the
// packages ship it, and returns the path of the executable.
func Binary(t testing.TB, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	err, done := binBuilt[name]
	if !done {
		err = build(name)
		binBuilt[name] = err
	}
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	return filepath.Join(binDir, name)
}

func build(name string) error {
	if binDir == "" {
		d, err := os.MkdirTemp("", "torpor-test-bin")
		if err != nil {
			return err
		}
		binDir = d
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), "./cmd/"+name)
	cmd.Dir = Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return &buildError{err: err, out: string(out)}
	}
	return nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Proc is a running binary whose stderr (its log) is kept and can be
// waited on line by line. It is killed when the test ends; its log is
// printed then if the test failed.
type Proc struct {
	Cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed and replaced at every line
	done  chan struct{} // closed when stderr reached EOF
	seen  int           // lines Next looked at
}

// Start runs bin with args and keeps its stderr.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	return StartWith(t, bin, nil, args...)
}

// StartWith is Start with setup (if not nil) called on the command
// before it starts: to set its SysProcAttr, its environment.
func StartWith(t testing.TB, bin string, setup func(*exec.Cmd), args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), added: make(chan struct{}), done: make(chan struct{})}
	if setup != nil {
		setup(p.Cmd)
	}
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stderr)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), p.Log())
		}
	})
	return p
}

func (p *Proc) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		close(p.added)
		p.added = make(chan struct{})
		p.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// Done is closed when the process's stderr reached its end: it and
// every process it started that shares its stderr have ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Log returns the log so far.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// Wait returns the submatches of the first line (from the start of the
// log) that matches re and contains every one of subs, waiting up to 30 s
// of real time for it: the process is a real peer (see package clock).
func (p *Proc) Wait(t testing.TB, re *regexp.Regexp, subs ...string) []string {
	t.Helper()
	return p.WaitWithin(t, 30*time.Second, re, subs...)
}

// WaitWithin is Wait with a wait of d instead of 30 s, for a process
// whose start depends on others (a relay waiting for its cluster).
func (p *Proc) WaitWithin(t testing.TB, d time.Duration, re *regexp.Regexp, subs ...string) []string {
	t.Helper()
	deadline := time.After(d)
	for i := 0; ; {
		p.mu.Lock()
		lines, added := p.lines, p.added
		p.mu.Unlock()
		for ; i < len(lines); i++ {
			if m := re.FindStringSubmatch(lines[i]); m != nil && hasAll(lines[i], subs) {
				return m
			}
		}
		select {
		case <-added:
		case <-p.done:
			t.Fatalf("%s exited without a log line matching %s with %q", filepath.Base(p.Cmd.Path), re, subs)
		case <-deadline:
			t.Fatalf("no log line matching %s with %q in %v", re, subs, d)
		}
	}
}

// Next waits for n more lines that contain every one of subs, after
// the lines earlier calls of Next looked at, and returns them; each line
// may take up to 30 s of real time.
func (p *Proc) Next(t testing.TB, n int, subs ...string) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		p.mu.Lock()
		lines, added := p.lines, p.added
		p.mu.Unlock()
		for ; p.seen < len(lines) && len(out) < n; p.seen++ {
			if hasAll(lines[p.seen], subs) {
				out = append(out, lines[p.seen])
			}
		}
		if len(out) == n {
			break
		}
		select {
		case <-added:
		case <-p.done:
			t.Fatalf("%s exited after %d of %d log lines with %q", filepath.Base(p.Cmd.Path), len(out), n, subs)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d log lines with %q in 30 s", len(out), n, subs)
		}
	}
	return out
}

// Count returns how many lines so far match re and contain every one of
// subs.
func (p *Proc) Count(re *regexp.Regexp, subs ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if re.MatchString(l) && hasAll(l, subs) {
			n++
		}
	}
	return n
}

func hasAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Stop sends SIGTERM and waits for the process to exit; it returns the
// exit error, nil for a clean exit.
func (p *Proc) Stop() error {
	if p.Cmd.ProcessState != nil {
		return nil
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	err := p.Cmd.Wait()
	<-p.done
	return err
}

// Kill sends SIGKILL and reaps the process.
func (p *Proc) Kill() {
	if p.Cmd.ProcessState == nil {
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
	}
}
