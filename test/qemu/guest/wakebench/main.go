// Command wakebench runs in the QEMU guest of test/qemu's
// BenchmarkEmptyWakeVM: it starts a torpor-agent as its child and measures,
// on the guest's kernel, the CPU time the agent spends on its empty wakes
// (test/internal/wakemeter, as test/link's BenchmarkEmptyWake does on the
// host).
//
//	wakebench -n 4 -time http://10.0.2.2:PORT/ [-debug-cpu] -- /bin/torpor-agent --key … --time-scale 120 …
//
// The agent's log (stderr) is kept and copied to the console once the
// wakes are measured: the console is an emulated UART whose every byte
// takes the guest's one CPU, which the agent's wakes should have to
// themselves. After the n'th timer wake it stops the agent (SIGTERM), measures the guest's clock against
// the host's time server at -time (test/qemu/timesync) and prints
//
//	RESULT {"wakes":{…},"offset":{…}}
//
// on the console.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/test/qemu/timesync"
)

func main() {
	n := flag.Int("n", 4, "Measure this many timer wakes after the boot wake.")
	timeURL := flag.String("time", "", "The host's time server, to measure the guest clock's offset after the wakes.")
	timeout := flag.Duration("timeout", 15*time.Minute, "Give up after this long.")
	debugCPU := flag.Bool("debug-cpu", false, "Run the agent with TORPOR_DEBUG_CPU=1: its CPU time on every log line, and a line per phase.")
	flag.Parse()
	if flag.NArg() == 0 || *timeURL == "" {
		fmt.Fprintln(os.Stderr, "wakebench: want -time URL -- AGENT ARGS...")
		os.Exit(2)
	}
	var r report.Wakebench
	var err error
	r.Wakes, err = run(*n, *timeout, *debugCPU, flag.Args())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r.Offset, err = timesync.Best(ctx, &http.Client{Timeout: 10 * time.Second}, *timeURL, 5)
		cancel()
	}
	if err != nil {
		r.Error = err.Error()
	}
	report.Print(r)
	if err != nil {
		os.Exit(1)
	}
}

// run starts the agent, measures n wakes and stops it.
func run(n int, timeout time.Duration, debugCPU bool, agent []string) (wakemeter.Wakes, error) {
	cmd := exec.Command(agent[0], agent[1:]...)
	if debugCPU {
		cmd.Env = append(os.Environ(), "TORPOR_DEBUG_CPU=1")
	}
	cmd.Stdout = os.Stdout
	logs, err := cmd.StderrPipe()
	if err != nil {
		return wakemeter.Wakes{}, err
	}
	if err := cmd.Start(); err != nil {
		return wakemeter.Wakes{}, err
	}
	m := wakemeter.New(cmd.Process.Pid, n)
	done := make(chan error, 1)
	var kept strings.Builder
	go func() { done <- follow(m, logs, &kept) }()
	select {
	case err = <-done:
		fmt.Print(kept.String())
		go io.Copy(os.Stdout, logs) // the agent's last lines
		err = errors.Join(err, stop(cmd))
	case <-time.After(timeout):
		err = errors.Join(fmt.Errorf("wakebench: not %d wakes in %v", n, timeout), stop(cmd))
		<-done // the log ends with the agent: m and kept are follow's until then
		fmt.Print(kept.String())
	}
	return m.Wakes(), err
}

// stop stops the agent with SIGTERM, or kills it after a minute.
func stop(cmd *exec.Cmd) error {
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
		return nil
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		return errors.New("wakebench: the agent did not stop within a minute of SIGTERM")
	}
}

// follow keeps the agent's log in kept and feeds it to m until m's last
// wake ended.
func follow(m *wakemeter.Meter, logs io.Reader, kept *strings.Builder) error {
	sc := bufio.NewScanner(logs)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		kept.WriteString(sc.Text() + "\n")
		done, err := m.Line(sc.Text())
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("the agent's log ended after %d wakes: %v", m.Wakes().N, sc.Err())
}
