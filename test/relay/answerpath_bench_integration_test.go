//go:build integration

package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// envFloor, set to a data directory, makes this package's test binary the
// floor server of BenchmarkAnswerPath instead of running tests (TestMain).
const envFloor = "TORPOR_FLOOR_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envFloor); dir != "" {
		if err := floorServer(dir); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// answerSenders is how many senders post at once, each on its own
// connections, as in issue 32's table.
const answerSenders = 64

// BenchmarkAnswerPath measures what a durable answer to a sender costs
// the server, in CPU per answer, side by side in one run (issue 32): the
// floor, a bare net/http server in its own process that group-commits and
// fsyncs each body and answers 503, and the real torpor-relay on each
// queue engine, answering for a sleeping agent 503 agent_asleep, queued.
// 64 senders post A2A SendMessage requests, each with one Governed Object
// of about 1 KiB in a data part, signed beforehand. It reports, per
// answer, the server process's CPU (server-cpu-µs/answer, from
// /proc/PID/task/*/schedstat) beside the rate, and cpu-ns/op for the
// server and this process together (internal/benchcpu); scripts/bench.sh
// prints each relay's CPU per answer over the floor's.
func BenchmarkAnswerPath(b *testing.B) {
	b.Run("server=floor", func(b *testing.B) {
		dir := b.TempDir()
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		b.Setenv(envFloor, dir)
		p := testenv.Start(b, self)
		url := p.WaitWithin(b, time.Minute, floorListening)[1]
		answers(b, p.Cmd.Process.Pid, url, didtest.Key(b, 1).DID(), "")
	})
	for _, engine := range []string{"bolt", "log"} {
		b.Run("server=relay-"+engine, func(b *testing.B) {
			dev := didtest.Key(b, 1)
			r := relaytest.Start(b, filepath.Join(b.TempDir(), "relay"), "--queue-engine", engine,
				"--allow-agent", dev.DID().String(), "--max-messages", "100000000", "--max-per-peer", "100000000",
				"--max-bytes", "1099511627776", "--max-peer-bytes", "1099511627776", "--max-queue-bytes", "0")
			relaytest.Publish(b, r.URL, dev, "sleep")
			answers(b, r.Cmd.Process.Pid, r.URL, dev.DID(), `"queued":true`)
		})
	}
}

// answers posts b.N signed requests to agent at the server url (process
// pid) from answerSenders senders and reports the server's CPU per
// answer. Every answer must be 503 and, for want non-empty, contain want.
func answers(b *testing.B, pid int, url string, agent did.DID, want string) {
	bodies := answerBodies(b, b.N)
	tokens := make([]string, answerSenders)
	for i := range tokens {
		tok, err := bearer.Issue(didtest.Key(b, byte(10+i)), url, time.Now(), 0)
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = bearer.Authorization(tok)
	}
	target := url + "/a/" + agent.String() + "/a2a/jsonrpc"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: answerSenders}, Timeout: time.Minute}
	cpu0, err := wakemeter.TaskCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	meter := benchcpu.Start(b)
	meter.Add(pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for s := range answerSenders {
		wg.Go(func() {
			for i := s; i < len(bodies); i += answerSenders {
				if err := post(client, target, tokens[s], bodies[i], want); err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	meter.Stop()
	cpu1, err := wakemeter.TaskCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	if len(failed) > 0 {
		b.Fatalf("%d senders stopped: %s", len(failed), failed[0])
	}
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "server-cpu-µs/answer")
}

// post sends one request and checks its answer.
func post(client *http.Client, target, auth string, body []byte, want string) error {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(got, []byte(want)) {
		return fmt.Errorf("answer %s %s, want 503 with %s", resp.Status, got, want)
	}
	return nil
}

// answerBodies returns n SendMessage requests, each with one Governed
// Object of about 1 KiB (a padded payload) signed by its own sender.
func answerBodies(b *testing.B, n int) [][]byte {
	b.Helper()
	out := make([][]byte, n)
	pad := strings.Repeat("x", 700)
	for i := range out {
		part := objectPart(b, didtest.Key(b, byte(10+i%answerSenders)), "https://torpor.dev/schemas/bench/v1", pad)
		req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage(fmt.Sprintf("m-%d", i), "", part))
		if err != nil {
			b.Fatal(err)
		}
		if out[i], err = json.Marshal(req); err != nil {
			b.Fatal(err)
		}
	}
	return out
}
