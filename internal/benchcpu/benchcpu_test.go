package benchcpu

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// spin burns d of this process's CPU time (getrusage; not wall time,
// which a loaded machine stretches).
func spin(d time.Duration) {
	start, _ := rusage(syscall.RUSAGE_SELF)
	for {
		now, _ := rusage(syscall.RUSAGE_SELF)
		if now-start >= d {
			return
		}
	}
}

// BenchmarkSpin checks the meter on a known cost: 1 ms of CPU per
// operation, so cpu-ns/op a little over 1e6, and another 1 ms paused that
// does not count (a paused spin counted would double it).
func BenchmarkSpin(b *testing.B) {
	m := Start(b)
	for b.Loop() {
		spin(time.Millisecond)
		b.StopTimer()
		m.Pause()
		spin(time.Millisecond)
		m.Resume()
		b.StartTimer()
	}
	// Above the spins: the runtime's own threads (GC, the benchmark's
	// bookkeeping), a few milliseconds at most.
	if cpu, ms := m.Stop(), time.Duration(b.N)*time.Millisecond; cpu < ms || cpu > ms*3/2+5*time.Millisecond {
		b.Errorf("%d spins of 1 ms (and as many paused) measured %v of CPU", b.N, cpu)
	}
}

// TestChildren: a child that burns CPU and is waited for counts, through
// RUSAGE_CHILDREN.
func TestChildren(t *testing.T) {
	if os.Getenv("BENCHCPU_SPIN") != "" {
		spin(300 * time.Millisecond)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildren$")
	cmd.Env = append(os.Environ(), "BENCHCPU_SPIN=1")
	var c counter
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if cpu, err := c.total(); err != nil || cpu < 200*time.Millisecond || cpu > 2*time.Second {
		t.Errorf("a child spinning 300 ms measured %v, %v", cpu, err)
	}
}

// TestRunningChild: a child still running at the end counts through
// /proc/PID/stat. The child spins, says so, and waits for its stdin to
// close.
func TestRunningChild(t *testing.T) {
	if os.Getenv("BENCHCPU_SPIN_WAIT") != "" {
		spin(300 * time.Millisecond)
		os.Stdout.WriteString("spun\n")
		io.Copy(io.Discard, os.Stdin)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunningChild$")
	cmd.Env = append(os.Environ(), "BENCHCPU_SPIN_WAIT=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if err := c.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "spun\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	if cpu, err := c.total(); err != nil || cpu < 200*time.Millisecond || cpu > 2*time.Second {
		t.Errorf("a running child that spun 300 ms measured %v, %v", cpu, err)
	}
}

func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	spin(100 * time.Millisecond)
	after, err := ProcessCPU(os.Getpid())
	if err != nil || after-before < 50*time.Millisecond {
		t.Errorf("ProcessCPU after spinning 100 ms: %v → %v, %v", before, after, err)
	}
}

// TestPausedChild: a running child's CPU while paused does not count.
func TestPausedChild(t *testing.T) {
	if os.Getenv("BENCHCPU_SPIN_TWICE") != "" {
		r := bufio.NewReader(os.Stdin)
		for range 2 {
			spin(200 * time.Millisecond)
			os.Stdout.WriteString("spun\n")
			r.ReadString('\n')
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPausedChild$")
	cmd.Env = append(os.Environ(), "BENCHCPU_SPIN_TWICE=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewReader(stdout)
	var m Meter
	m.b = &testing.B{} // Pause and Resume report nothing
	m.Resume()
	if err := m.c.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	m.Pause()
	out.ReadString('\n') // the first spin, paused
	m.Resume()
	stdin.Write([]byte("go\n"))
	out.ReadString('\n') // the second, counted
	m.Pause()
	if m.paused < 150*time.Millisecond || m.paused > 350*time.Millisecond {
		t.Errorf("one of two 200 ms spins counted, measured %v", m.paused)
	}
}
