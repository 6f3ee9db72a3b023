// Package benchcpu reports the CPU time a benchmark spends per operation,
// beside its rate. On two shared cores a rate moves with the machine's
// load; the CPU an operation costs does not, or much less.
//
// Call Start where the measured part begins (before the b.Loop loop, or
// after b.ResetTimer) and Stop where it ends:
//
//	m := benchcpu.Start(b)
//	for b.Loop() {
//		…
//	}
//	m.Stop()
//
// Pause and Resume leave out set-up inside the loop, beside b.StopTimer
// and b.StartTimer. Stop reports "cpu-ns/op": the user and system time of this process
// (getrusage(2), RUSAGE_SELF), of the children it waited for in between
// (RUSAGE_CHILDREN) and of the processes added with Add (proc(5),
// /proc/PID/stat), divided by b.N.
package benchcpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Meter measures CPU time from Start to Stop.
type Meter struct {
	b       *testing.B
	c       counter
	running bool
	paused  time.Duration // counted before the last Pause
}

// Start starts measuring.
func Start(b *testing.B) *Meter {
	b.Helper()
	m := &Meter{b: b}
	m.Resume()
	return m
}

// Add counts the CPU of the running process pid (a child, or a process a
// child started) from now to Stop. A process that has ended and been
// waited for by Stop is counted by RUSAGE_CHILDREN, less what it had spent
// before Add.
func (m *Meter) Add(pid int) {
	m.b.Helper()
	if err := m.c.add(pid); err != nil {
		m.b.Fatalf("benchcpu: %v", err)
	}
}

// Pause stops counting, as b.StopTimer stops the clock, until Resume:
// for set-up inside the loop. Processes added with Add count again after
// Resume, while they run.
func (m *Meter) Pause() {
	m.b.Helper()
	if !m.running {
		return
	}
	cpu, err := m.c.total()
	if err != nil {
		m.b.Fatalf("benchcpu: %v", err)
	}
	m.paused, m.running = m.paused+cpu, false
}

// Resume counts again after Pause.
func (m *Meter) Resume() {
	m.b.Helper()
	if err := m.c.start(); err != nil {
		m.b.Fatalf("benchcpu: %v", err)
	}
	m.running = true
}

// Stop reports the CPU time per operation as "cpu-ns/op" and returns the
// CPU time measured.
func (m *Meter) Stop() time.Duration {
	m.b.Helper()
	m.Pause()
	cpu := m.paused
	if m.b.N > 0 {
		m.b.ReportMetric(float64(cpu.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
	}
	return cpu
}

// counter is Meter's arithmetic.
type counter struct {
	self, children time.Duration
	procs          map[int]time.Duration // CPU of added processes at add
}

func (c *counter) start() (err error) {
	if c.procs == nil {
		c.procs = map[int]time.Duration{}
	}
	for pid := range c.procs {
		if c.procs[pid], err = ProcessCPU(pid); err != nil {
			delete(c.procs, pid) // ended while paused
		}
	}
	if c.self, err = rusage(syscall.RUSAGE_SELF); err != nil {
		return err
	}
	c.children, err = rusage(syscall.RUSAGE_CHILDREN)
	return err
}

func (c *counter) add(pid int) error {
	cpu, err := ProcessCPU(pid)
	c.procs[pid] = cpu
	return err
}

func (c *counter) total() (time.Duration, error) {
	self, err := rusage(syscall.RUSAGE_SELF)
	if err != nil {
		return 0, err
	}
	children, err := rusage(syscall.RUSAGE_CHILDREN)
	if err != nil {
		return 0, err
	}
	cpu := self - c.self + children - c.children
	for pid, before := range c.procs {
		now, err := ProcessCPU(pid)
		if err != nil {
			now = 0 // ended and waited for: in RUSAGE_CHILDREN, whole
		}
		cpu += now - before
	}
	return cpu, nil
}

func rusage(who int) (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture this module builds for (proc(5)).
const ticksPerSecond = 100

// ProcessCPU returns the user and system time of process pid and of its
// children that it waited for (utime, stime, cutime and cstime of
// /proc/PID/stat), in 10 ms ticks.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields after its last ')' start with field 3, state.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:15] { // fields 14-17: utime stime cutime cstime
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / ticksPerSecond, nil
}
