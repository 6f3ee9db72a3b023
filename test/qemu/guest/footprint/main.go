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
// emulator, these are the agent's own figures.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

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
	cmd := exec.Command(agent[0], agent[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Error = err.Error()
		return r
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-all:
		r.ElapsedMS = time.Since(start).Milliseconds()
		r.PeakKiB, r.RSSKiB = status(cmd.Process.Pid)
	case err := <-exited:
		r.Error = fmt.Sprintf("the agent exited after %d deliveries: %v", got.Load(), err)
	case <-time.After(timeout):
		r.Error = fmt.Sprintf("%d of %d deliveries in %v", got.Load(), n, timeout)
	}
	r.Delivered = got.Load()
	if r.Error == "" {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			r.Error = "the agent did not stop within a minute of SIGTERM"
		}
	}
	return r
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
