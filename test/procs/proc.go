package procs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one daemon StartProc started: a real binary in a process of its
// own, whose output is copied to a log file and parsed line by line.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  *os.File
	out  *Log
	done chan struct{} // closed when the process exited and its output was read
	err  error         // the exit status, valid after done
}

// StartProc starts path with args in dir. Its stdout and stderr go, line by
// line, to logPath and to out (parsed by ParseLine; lines slog did not
// write are kept with only Raw set). The child stays in its parent's
// process group, so that scripts/demo.sh can end everything at once, and
// gets SIGKILL if its parent dies first (Pdeathsig).
func StartProc(name, path string, args []string, dir, logPath string, env []string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, w, w
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "# %s %s\n", path, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		f.Close()
		return nil, fmt.Errorf("procs: starting %s: %w", name, err)
	}
	w.Close()
	p := &Proc{Name: name, cmd: cmd, log: f, out: NewLog(), done: make(chan struct{})}
	go p.read(r)
	return p, nil
}

// read copies the output until the process closed it, then reaps the
// process.
func (p *Proc) read(r io.ReadCloser) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		s := sc.Text()
		fmt.Fprintln(p.log, s)
		l, err := ParseLine(s)
		if err != nil {
			l = Line{Raw: s}
		}
		p.out.Add(l)
	}
	r.Close()
	p.err = p.cmd.Wait()
	p.log.Close()
	p.out.Close()
	close(p.done)
}

// Out returns the process's parsed output.
func (p *Proc) Out() *Log { return p.out }

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process exited and its output was read.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err returns how the process exited (nil for status 0); valid after Done.
func (p *Proc) Err() error { return p.err }

// PeakRSS returns the process's peak resident set size (VmHWM in
// /proc/PID/status), or 0 when it cannot be read.
func (p *Proc) PeakRSS() int64 { return PeakRSS(p.Pid()) }

// PeakRSS returns the peak resident set size of the live process pid
// (VmHWM in /proc/PID/status), or 0 when it cannot be read. Not
// ru_maxrss: Go starts children with vfork semantics, the child sharing
// the parent's memory until it execs, and Linux keeps the high-water RSS
// of the memory an exec replaces in the process's ru_maxrss, so a child
// of a test process would report the test's own.
func PeakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb << 10
		}
	}
	return 0
}

// Stop asks the process to stop (SIGTERM), and kills it (SIGKILL) if it has
// not exited within grace. It returns the exit error of a process that did
// not stop cleanly, nil otherwise.
func (p *Proc) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitErr()
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("procs: %s did not stop within %v of SIGTERM and was killed", p.Name, grace)
	}
}

// exitErr is p.err, except that dying of the SIGTERM Stop sent counts as a
// clean stop.
func (p *Proc) exitErr() error {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	if p.err != nil {
		return fmt.Errorf("procs: %s: %w", p.Name, p.err)
	}
	return nil
}

// Log is the growing list of a process's output lines; waiters are woken
// as lines arrive.
type Log struct {
	mu sync.Mutex
	// mu guards the following fields.
	lines  []Line
	closed bool
	notify chan struct{} // closed and replaced on every change
}

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{notify: make(chan struct{})} }

// Add appends l and wakes the waiters.
func (g *Log) Add(l Line) {
	g.mu.Lock()
	g.lines = append(g.lines, l)
	close(g.notify)
	g.notify = make(chan struct{})
	g.mu.Unlock()
}

// Close marks the end of the output: waiters stop waiting for more.
func (g *Log) Close() {
	g.mu.Lock()
	g.closed = true
	close(g.notify)
	g.notify = make(chan struct{})
	g.mu.Unlock()
}

// Lines returns the lines from index from on, whether the log is closed,
// and a channel closed at the next change.
func (g *Log) Lines(from int) ([]Line, bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if from > len(g.lines) {
		from = len(g.lines)
	}
	return append([]Line(nil), g.lines[from:]...), g.closed, g.notify
}

// Len returns the number of lines so far.
func (g *Log) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lines)
}

// errClosed is returned by Await when the process's output ended first.
var errClosed = errors.New("procs: the process exited")

// Await returns the first line at index from or later that match accepts,
// and the index after it. It fails when ctx ends or the output ends first.
func (g *Log) Await(ctx context.Context, from int, match func(Line) bool) (Line, int, error) {
	for {
		lines, closed, changed := g.Lines(from)
		for i, l := range lines {
			if match(l) {
				return l, from + i + 1, nil
			}
		}
		from += len(lines)
		if closed {
			return Line{}, from, errClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Line{}, from, ctx.Err()
		}
	}
}

// Follow calls fn for every line, present and future, until the output
// ends or ctx is done. It runs in the caller's goroutine.
func (g *Log) Follow(ctx context.Context, fn func(Line)) {
	from := 0
	for {
		lines, closed, changed := g.Lines(from)
		for _, l := range lines {
			fn(l)
		}
		from += len(lines)
		if closed {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Tail returns the last n raw lines, for a failure report.
func (g *Log) Tail(n int) []string {
	lines, _, _ := g.Lines(0)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Raw
	}
	return out
}
