//go:build integration

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// envPublisher, set to NATS URLs (comma-separated), makes this package's
// test binary the publisher process of BenchmarkEnqueueCPU instead of
// running tests (TestMain, publisherMain).
const envPublisher = "TORPOR_CPU_PUBLISHER"

func TestMain(m *testing.M) {
	if urls := os.Getenv(envPublisher); urls != "" {
		if err := publisherMain(strings.Split(urls, ","), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "publisher:", err)
			os.Exit(1)
		}
		return
	}
	if urls := os.Getenv(envHTTPFloor); urls != "" {
		if err := httpFloorMain(strings.Split(urls, ","), os.Getenv(envHTTPFloorPrefix), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "http-floor:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// publisherMain connects once to each server of urls and then, for each
// line "MODE PREFIX N [ARG]" read from in, makes N publishes from 64
// publishers (publisher i on subject PREFIX<i>, over the connection i
// modulo the servers, each waiting for its acknowledgement) and writes
// "ok" or the first error as a line to out. MODE raw publishes the 1 KiB
// body alone; paced does the same, each publisher sleeping ARG µs after
// each acknowledgement, as a relay's sender waits for its answer while
// the relay works; protocol publishes what store/jsstore does
// (protocolPublisher); busy does the same after spending ARG µs of CPU
// before each publish (busyFor). It returns at the end of in.
func publisherMain(urls []string, in io.Reader, out io.Writer) error {
	jss, err := connectJetStreams(urls)
	if err != nil {
		return err
	}
	protocols := map[string]func(int, []byte) error{}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) != 3 && len(f) != 4 {
			return fmt.Errorf("bad command %q", lines.Text())
		}
		mode, pre := f[0], f[1]
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		var arg float64
		if len(f) == 4 {
			if arg, err = strconv.ParseFloat(f[3], 64); err != nil {
				return err
			}
		}
		if protocols[pre] == nil && (mode == "protocol" || mode == "busy") {
			protocols[pre] = protocolPublisher(jss, pre)
		}
		if err := spread(n, publisherDo(jss, mode, pre, arg, protocols[pre])); err != nil {
			fmt.Fprintln(out, "error:", err)
			continue
		}
		fmt.Fprintln(out, "ok")
	}
	return lines.Err()
}

// publisherDo is publisherMain's publish of mode for one command.
func publisherDo(jss []jetstream.JetStream, mode, pre string, arg float64, protocol func(int, []byte) error) func(i int) error {
	payload := body("bench", 1024)
	raw := func(i int) error {
		_, err := jss[i%len(jss)].Publish(context.Background(), pre+strconv.Itoa(i), payload)
		return err
	}
	d := time.Duration(arg * float64(time.Microsecond))
	switch mode {
	case "raw":
		return raw
	case "paced":
		// The workload's think time, not a wait for a condition: the
		// sleep is what holds the rate down.
		return func(i int) error { err := raw(i); time.Sleep(d); return err }
	case "protocol":
		return func(i int) error { return protocol(i, payload) }
	case "busy":
		return func(i int) error { busyFor(d); return protocol(i, payload) }
	}
	return func(int) error { return fmt.Errorf("unknown mode %q", mode) }
}

// busySink keeps busyFor's loop from being optimised away.
var busySink atomic.Int64

// busyFor spins on a CPU for d (reading the clock), the way a relay
// spends CPU on each request before it publishes the record.
func busyFor(d time.Duration) {
	var n int64
	for start := time.Now(); time.Since(start) < d; n++ {
	}
	busySink.Add(n)
}

// spread calls do n times from benchSenders goroutines, goroutine i
// calling do(i), and returns the first error (a goroutine stops at its
// first).
func spread(n int, do func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for i := range benchSenders {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := do(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// publisherProc is the publisher process of BenchmarkEnqueueCPU.
type publisherProc struct {
	pid int
	in  io.Writer
	out *bufio.Reader
}

// startPublisher starts this test binary as the publisher process
// (publisherMain) on urls; it ends with the benchmark.
func startPublisher(b *testing.B, urls []string) *publisherProc {
	pid, in, out := startSelf(b, envPublisher+"="+strings.Join(urls, ","))
	return &publisherProc{pid: pid, in: in, out: out}
}

// startSelf starts this test binary again with env added to its
// environment (which makes TestMain run one of the benchmark's
// processes), its stdin and stdout piped to the caller and its stderr to
// this process's; it ends, its stdin closed, with the benchmark.
func startSelf(b *testing.B, env ...string) (pid int, in io.Writer, out *bufio.Reader) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return cmd.Process.Pid, stdin, bufio.NewReader(stdout)
}

// do has the publisher make n publishes of mode on the subjects under
// pre, with args after them (publisherMain), and waits until they are
// acknowledged.
func (p *publisherProc) do(mode, pre string, n int, args ...string) error {
	if _, err := fmt.Fprintln(p.in, strings.Join(append([]string{mode, pre, strconv.Itoa(n)}, args...), " ")); err != nil {
		return err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return fmt.Errorf("publisher: %s", line)
	}
	return nil
}

// connectJetStreams connects once to each server of urls.
func connectJetStreams(urls []string) ([]jetstream.JetStream, error) {
	var jss []jetstream.JetStream
	for _, u := range urls {
		js, err := connectJetStream(u)
		if err != nil {
			return nil, err
		}
		jss = append(jss, js)
	}
	return jss, nil
}

// connectJetStream connects to the server at url.
func connectJetStream(url string) (jetstream.JetStream, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	return jetstream.New(nc)
}
