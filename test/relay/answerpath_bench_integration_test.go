//go:build integration

package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// connections, as in docs/performance.md's table.
const answerSenders = 64

// answerRounds is how many rounds BenchmarkAnswerPath splits each
// server's answers into, taking the servers in turn in every round, so
// that a change in the machine's load falls on all of them alike.
const answerRounds = 8

// answerPathBase is the baseline commit, d2faa43: BenchmarkAnswerPath
// runs its torpor-relay, built from git history, beside this tree's,
// unless envAnswerBase names another revision.
const answerPathBase = "d2faa430a527491299a7dd18fd1b5470edbfd049"

// envAnswerBase, set to a git revision, makes BenchmarkAnswerPath's base
// relay (NAME-base) that revision's instead of answerPathBase's: a change
// measured against the commit before it, side by side in one run.
const envAnswerBase = "TORPOR_ANSWER_BASE"

// BenchmarkAnswerPath measures what a durable answer to a sender costs
// the server, in CPU per answer, side by side in one run: the
// floor, a bare net/http server in its own process that group-commits and
// fsyncs each body and answers 503, and the real torpor-relay on each
// queue engine, this tree's and answerPathBase's or envAnswerBase's
// (NAME-base), answering
// for a sleeping agent 503 agent_asleep, queued. 64 senders post A2A
// SendMessage requests, each with one Governed Object of about 1 KiB in
// a data part, signed beforehand. The servers run at once and answer in
// turns, answerRounds rounds of b.N/answerRounds answers each. It reports
// each server's CPU per answer (NAME-cpu-µs/answer, from
// /proc/PID/task/*/schedstat), each relay's over the floor's
// (NAME-x-floor), and cpu-ns/op for the servers and this process together
// (internal/benchcpu); scripts/bench.sh prints the ratios.
func BenchmarkAnswerPath(b *testing.B) {
	rev := answerPathBase
	if r := os.Getenv(envAnswerBase); r != "" {
		rev = r
	}
	base := filepath.Join(testenv.BuildAt(b, rev, "torpor-relay"), "torpor-relay")
	servers := []*answerServer{startAnswerFloor(b)}
	for _, engine := range []string{"log", "bolt"} {
		servers = append(servers, startAnswerRelay(b, "", engine), startAnswerRelay(b, base, engine))
	}
	bodies := answerBodies(b, b.N)
	b.ResetTimer()
	meter := benchcpu.Start(b)
	for _, s := range servers {
		meter.Add(s.pid)
	}
	for r := range answerRounds {
		lo, hi := roundBounds(r, len(bodies))
		for _, s := range servers {
			s.answer(b, bodies[lo:hi])
		}
	}
	b.StopTimer()
	meter.Stop()
	floor := servers[0].perAnswer(len(bodies))
	for _, s := range servers {
		b.ReportMetric(s.perAnswer(len(bodies)), s.name+"-cpu-µs/answer")
		if s != servers[0] && floor > 0 {
			b.ReportMetric(s.perAnswer(len(bodies))/floor, s.name+"-x-floor")
		}
	}
}

// roundBounds returns where round r's share of n bodies starts and ends,
// at multiples of answerSenders (the last round ends at n), so that each
// body goes to the sender whose key signed it (answerBodies).
func roundBounds(r, n int) (lo, hi int) {
	at := func(r int) int { return r * n / answerRounds / answerSenders * answerSenders }
	lo, hi = at(r), at(r+1)
	if r == answerRounds-1 {
		hi = n
	}
	return lo, hi
}

// answerServer is one server of BenchmarkAnswerPath, with its senders'
// tokens and client and the CPU it spent answering.
type answerServer struct {
	name   string
	pid    int
	target string
	want   string // in every answer, when not empty
	tokens []string
	client *http.Client
	cpu    time.Duration
}

func startAnswerFloor(b *testing.B) *answerServer {
	dir := b.TempDir()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv(envFloor, dir)
	p := testenv.Start(b, self)
	url := p.WaitWithin(b, time.Minute, floorListening)[1]
	return newAnswerServer(b, "floor", p.Cmd.Process.Pid, url, didtest.Key(b, 1).DID(), "")
}

// startAnswerRelay starts torpor-relay on engine: this tree's for bin
// empty, else the binary bin (answerPathBase's).
func startAnswerRelay(b *testing.B, bin, engine string) *answerServer {
	dev := didtest.Key(b, 1)
	name := "relay-" + engine
	if bin == "" {
		bin = testenv.Binary(b, "torpor-relay")
	} else {
		name += "-base"
	}
	r := relaytest.StartBinary(b, bin, filepath.Join(b.TempDir(), "relay"), "--queue-engine", engine,
		"--allow-agent", dev.DID().String(), "--max-messages", "100000000", "--max-per-peer", "100000000",
		"--max-bytes", "1099511627776", "--max-peer-bytes", "1099511627776", "--max-queue-bytes", "0")
	relaytest.Publish(b, r.URL, dev, "sleep")
	return newAnswerServer(b, name, r.Cmd.Process.Pid, r.URL, dev.DID(), `"queued":true`)
}

func newAnswerServer(b *testing.B, name string, pid int, url string, agent did.DID, want string) *answerServer {
	s := &answerServer{name: name, pid: pid, target: url + "/a/" + agent.String() + "/a2a/jsonrpc", want: want,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: answerSenders}, Timeout: time.Minute}}
	for i := range answerSenders {
		tok := relaytest.Token(b, didtest.Key(b, byte(10+i)), url)
		s.tokens = append(s.tokens, bearer.Authorization(tok))
	}
	return s
}

// answer posts bodies to s from answerSenders senders, each body with its
// sender's token, and adds the server's CPU to s.cpu. Every answer must
// be 503 and, for s.want non-empty, contain it.
func (s *answerServer) answer(b *testing.B, bodies [][]byte) {
	cpu0, err := wakemeter.TaskCPU(s.pid)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for k := range answerSenders {
		wg.Go(func() {
			for i := k; i < len(bodies); i += answerSenders {
				if err := post(s.client, s.target, s.tokens[k], bodies[i], s.want); err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	cpu1, err := wakemeter.TaskCPU(s.pid)
	if err != nil {
		b.Fatal(err)
	}
	if len(failed) > 0 {
		b.Fatalf("%s: %d senders stopped: %s", s.name, len(failed), failed[0])
	}
	s.cpu += cpu1 - cpu0
}

// perAnswer is s's CPU per answer in µs, for n answers.
func (s *answerServer) perAnswer(n int) float64 {
	return float64(s.cpu.Nanoseconds()) / 1e3 / float64(n)
}

// post sends one request and checks its answer.
func post(client *http.Client, target, auth string, body []byte, want string) error {
	status, got, err := relaytest.Exchange(client, target, auth, body)
	if err != nil {
		return err
	}
	if status != http.StatusServiceUnavailable || !bytes.Contains(got, []byte(want)) {
		return fmt.Errorf("answer %d %s, want 503 with %s", status, got, want)
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
