// Command footprint runs in the QEMU guest of test/qemu's TestFootprint: it
// is the application of a torpor-agent it starts as its child, and
// measures the agent's resident memory on the guest's real kernel.
//
//	footprint -n 500 -socket /tmp/app.sock -- /bin/torpor-agent --config /etc/torpor/agent.json
//
// It serves the agent's "unix" handler (runtime/deliver.Unix: one HTTP
// POST per accepted object) on -socket, starts the agent, and when the
// n'th delivery arrived reads the agent's VmHWM and VmRSS from
// /proc/PID/status, stops it with SIGTERM and prints
//
//	RESULT {"delivered":500,"peak_kib":…,"rss_kib":…,"elapsed_ms":…}
//
// on the console. Unlike under qemu-user, where the process is the
// emulator, these are the agent's own figures. It also samples the
// agent's /proc/PID/status every few milliseconds to the last delivery
// (the sample with the most VmRSS says what the peak was made of: anonymous
// or file-backed), reads what the binary had resident then
// (/proc/PID/smaps), sums the agent's GODEBUG=gctrace=1 lines (the Go
// heap), and, when the agent logs the end of its wake (msg=wake: it
// sleeps), reads its memory asleep after a few seconds of settling.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
)

func main() {
	n := flag.Int64("n", 500, "Stop the agent after this many deliveries.")
	sock := flag.String("socket", "/tmp/app.sock", "The Unix socket of the agent's handler.")
	timeout := flag.Duration("timeout", 10*time.Minute, "Give up after this long.")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "footprint: want -- AGENT ARGS...")
		os.Exit(2)
	}
	r := run(*n, *sock, *timeout, flag.Args())
	report.Print(r)
	if r.Error != "" {
		os.Exit(1)
	}
}

// asleepSettle is how long after the wake's end the agent's memory asleep
// is read: the Go runtime's background scavenger returns the heap the
// drain freed to the kernel within it.
const asleepSettle = 5 * time.Second

// sampleEvery is how often the agent's /proc/PID/status is sampled.
const sampleEvery = 5 * time.Millisecond

func run(n int64, sock string, timeout time.Duration, agent []string) report.Footprint {
	var r report.Footprint
	ln, err := net.Listen("unix", sock)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var got atomic.Int64
	all := make(chan struct{})
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		if got.Add(1) == n {
			close(all)
		}
		fmt.Fprintf(w, `{"effectId":"footprint-%d"}`, got.Load())
	}))
	a, err := startAgent(agent)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	start := time.Now()
	s := procs.SampleMemory(a.cmd.Process.Pid, sampleEvery)
	select {
	case <-all:
		r.ElapsedMS = time.Since(start).Milliseconds()
		r.PeakKiB, r.RSSKiB = status(a.cmd.Process.Pid)
		r.PeakSample, _, _, _ = s.Stop()
		if maps, err := procs.Mappings(a.cmd.Process.Pid); err == nil {
			r.BinaryKiB = maps[agent[0]].RSS >> 10
			for name, m := range maps {
				if path.Base(name) == "agent.db" {
					r.DBKiB += m.RSS >> 10
				}
			}
		}
		r.Asleep = a.asleep(timeout)
	case err := <-a.exited:
		r.Error = fmt.Sprintf("the agent exited after %d deliveries: %v", got.Load(), err)
	case <-time.After(timeout):
		r.Error = fmt.Sprintf("%d of %d deliveries in %v", got.Load(), n, timeout)
	}
	r.Delivered = got.Load()
	if r.Error == "" {
		a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(time.Minute):
			a.cmd.Process.Kill()
			r.Error = "the agent did not stop within a minute of SIGTERM"
		}
	}
	r.GC = a.gc()
	return r
}

// agent is the running torpor-agent and what its log says.
type agent struct {
	cmd    *exec.Cmd
	exited chan error
	woke   chan struct{} // closed at the first "msg=wake" line: the wake ended
	mu     sync.Mutex
	// mu guards all following fields.
	trace procs.GCTrace
}

// startAgent starts the agent with GODEBUG=gctrace=1; its stdout and the
// lines of its stderr other than gctrace's go to the console.
func startAgent(args []string) (*agent, error) {
	a := &agent{cmd: exec.Command(args[0], args[1:]...), exited: make(chan error, 1), woke: make(chan struct{})}
	a.cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	a.cmd.Stdout = os.Stdout
	logs, err := a.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	read := make(chan struct{})
	go func() {
		a.follow(logs)
		close(read)
	}()
	go func() {
		<-read // Wait closes the pipe: read it to its end first
		a.exited <- a.cmd.Wait()
	}()
	return a, nil
}

// follow reads the agent's stderr to its end.
func (a *agent) follow(logs io.Reader) {
	sc := bufio.NewScanner(logs)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	woke := false
	for sc.Scan() {
		l := sc.Text()
		a.mu.Lock()
		gc := a.trace.Add(l)
		a.mu.Unlock()
		if gc {
			continue
		}
		fmt.Println(l)
		if !woke && strings.Contains(l, "msg=wake ") {
			woke = true
			close(a.woke)
		}
	}
}

func (a *agent) gc() procs.GCTrace {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.trace
}

// asleep waits for the end of the agent's wake, then asleepSettle, and
// reads its memory (zero if the wake did not end within timeout).
func (a *agent) asleep(timeout time.Duration) procs.Memory {
	select {
	case <-a.woke:
	case <-time.After(timeout):
		return procs.Memory{}
	}
	time.Sleep(asleepSettle)
	m, _ := procs.ReadMemory(a.cmd.Process.Pid)
	return m
}

// status reads VmHWM and VmRSS (kB) from /proc/PID/status.
func status(pid int) (hwm, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		var kb int64
		fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
		switch k {
		case "VmHWM":
			hwm = kb
		case "VmRSS":
			rss = kb
		}
	}
	return hwm, rss
}
