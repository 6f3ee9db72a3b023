//go:build integration

package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// historyRuns is how many randomized runs TestHistory makes by default,
// sized to fit `make check`; HISTORY_RUNS=N makes N.
const historyRuns = 6

// TestHistory is the history checker (docs/scale-out.md, "The history
// checker"). Three torpor-relay processes on a cluster of three nats-server
// processes, each relay reaching each server through its own fault proxy
// (faultproxy_integration_test.go). Each run takes a new device with a
// tight bound, concurrent senders spread over the relays, a device that
// drains through random relays (sometimes leaving a batch unacknowledged
// and linking again), and one or two faults from its seed: a NATS server
// killed with SIGKILL, a relay killed with SIGKILL, a relay cut from some
// servers (blackholed or reset). Every operation's invocation and response
// is recorded and the history checked with porcupine against queueModel.
// A failing run names its seed (replay it with HISTORY_SEED=seed) and
// porcupine's HTML visualization of the history.
func TestHistory(t *testing.T) {
	seeds := historySeeds(t)
	h := startHistoryFleet(t)
	for run, seed := range seeds {
		t.Logf("run %d of %d: HISTORY_SEED=%d", run+1, len(seeds), seed)
		p := planRun(seed)
		hist := h.run(t, run, p)
		checkHistory(t, p, hist)
		if t.Failed() {
			t.Fatalf("run %d failed; replay it with HISTORY_SEED=%d", run+1, seed)
		}
	}
}

// historySeeds returns HISTORY_SEED alone when it is set, or else
// HISTORY_RUNS seeds (historyRuns by default) from the time.
func historySeeds(t *testing.T) []uint64 {
	if s := os.Getenv("HISTORY_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HISTORY_SEED=%q: %v", s, err)
		}
		return []uint64{seed}
	}
	runs := historyRuns
	if s := os.Getenv("HISTORY_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("HISTORY_RUNS=%q: want a positive count", s)
		}
		runs = n
	}
	base := uint64(time.Now().UnixNano())
	seeds := make([]uint64, runs)
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	return seeds
}

// faultKind is one of the faults a run injects.
type faultKind int

const (
	faultNATSKill faultKind = iota
	faultRelayKill
	faultBlackhole
	faultReset
)

func (k faultKind) String() string {
	return [...]string{"SIGKILL nats-server", "SIGKILL relay", "blackhole relay→servers", "reset relay→servers"}[k]
}

// fault is one scheduled fault: injected when the run's senders have had
// at answers, healed when they have had heal and it has lasted hold.
type fault struct {
	kind     faultKind
	relay    int   // faultRelayKill, faultBlackhole, faultReset
	node     int   // faultNATSKill
	nodes    []int // faultBlackhole, faultReset: the servers cut off
	at, heal int64 // answers
	hold     time.Duration
	since    time.Time // injected at
	injected bool
	healed   chan struct{}
}

func (f *fault) String() string {
	switch f.kind {
	case faultNATSKill:
		return fmt.Sprintf("%s n%d at answer %d, restarted at %d and %v", f.kind, f.node+1, f.at, f.heal, f.hold)
	case faultRelayKill:
		return fmt.Sprintf("%s %d at answer %d, restarted at %d and %v", f.kind, f.relay+1, f.at, f.heal, f.hold)
	}
	var nodes []string
	for _, n := range f.nodes {
		nodes = append(nodes, fmt.Sprint("n", n+1))
	}
	return fmt.Sprintf("%s: relay %d from %s at answer %d, healed at %d and %v", f.kind, f.relay+1, strings.Join(nodes, ","), f.at, f.heal, f.hold)
}

// runPlan is what a seed decides about a run.
type runPlan struct {
	seed              uint64
	senders, perSend  int
	bound, batch      int
	faults            []*fault
	noAck, relinkEach float64 // the drainer's odds
}

// planRun draws a run from seed.
func planRun(seed uint64) *runPlan {
	r := rand.New(rand.NewPCG(seed, 0x70726f72))
	p := &runPlan{seed: seed, senders: 3 + r.IntN(3), perSend: 12 + r.IntN(12), bound: 3 + r.IntN(5), batch: 1 + r.IntN(4),
		noAck: 0.1 + 0.2*r.Float64(), relinkEach: 0.1 + 0.3*r.Float64()}
	total := int64(p.senders * p.perSend)
	for k := range 1 + r.IntN(2) {
		f := &fault{kind: faultKind(r.IntN(4)), relay: r.IntN(3), node: r.IntN(3), healed: make(chan struct{})}
		if k == 1 {
			// At most one server down, so that the streams keep their
			// quorum; never the relay of the first fault, so that a relay
			// restarts only with a way to its servers.
			f.relay = (p.faults[0].relay + 1) % 3
			if f.kind == faultNATSKill && p.faults[0].kind == faultNATSKill {
				f.kind = faultRelayKill
			}
		}
		f.at = 1 + r.Int64N(total/2)
		f.heal = f.at + 1 + r.Int64N(total/2)
		f.hold = time.Duration(500+r.IntN(3500)) * time.Millisecond
		// One or two of the relay's three servers, so that it keeps one.
		f.nodes = []int{r.IntN(3)}
		if r.IntN(2) == 0 {
			f.nodes = append(f.nodes, (f.nodes[0]+1+r.IntN(2))%3)
		}
		p.faults = append(p.faults, f)
	}
	return p
}

func (p *runPlan) String() string {
	var fs []string
	for _, f := range p.faults {
		fs = append(fs, f.String())
	}
	return fmt.Sprintf("%d senders × %d, bound %d, batches of %d; %s", p.senders, p.perSend, p.bound, p.batch, strings.Join(fs, "; "))
}

// recorder collects a run's operations, with times from one monotonic
// clock (the history's real-time order).
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// unanswered marks an operation that never returned: it is given the end
// of the history as its return, for it may take effect at any time after
// its call.
const unanswered = -1

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(client int, in queueInput, call int64, out queueOutput) {
	ret := r.now()
	if out.unknown {
		ret = unanswered
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// history returns the operations, the unanswered ones returning last,
// with each unanswered enqueue settled by what the device received:
//   - one whose request the device pulled took effect, before the first
//     pull that returned it did: it returns then, answered queued;
//   - one the device never pulled took no effect (the run ends with a
//     drain that empties the queue, so a record stored is pulled): it is
//     a refusal, which leaves the queue as it is.
//
// An enqueue left unknown may or may not take effect at any later time,
// so porcupine tries each unknown both ways at every point up to the end
// of the history; a few of them in a run of hundreds of operations kept
// it searching past checkTimeout on loaded cores. Settled, the check is
// as strong (an unknown could be either; the pulls say which it was) and
// far cheaper.
func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.now() + 1
	pulled := map[string]int64{} // request id -> return of the first pull with it
	for _, o := range r.ops {
		if in := o.Input.(queueInput); in.kind == opPull {
			for _, rec := range o.Output.(queueOutput).recs {
				if t, ok := pulled[rec.id]; !ok || o.Return < t {
					pulled[rec.id] = o.Return
				}
			}
		}
	}
	ops := make([]porcupine.Operation, len(r.ops))
	for i, o := range r.ops {
		if o.Return == unanswered {
			o.Return = end
			if in := o.Input.(queueInput); in.kind == opEnqueue {
				o.Output = queueOutput{answer: "unanswered, never pulled"}
				if t, ok := pulled[in.id]; ok {
					o.Output, o.Return = queueOutput{queued: true, answer: "unanswered, pulled"}, t
				}
			}
		}
		ops[i] = o
	}
	return ops
}

// checkTimeout bounds porcupine's search of one history. A run whose
// fault keeps a sender refused (507) for seconds records thousands of
// operations, and unanswered ones (a killed process) widen the search:
// on two loaded cores one such history took more than a minute to check
// and came back Unknown, which fails the run as a violation would.
const checkTimeout = 4 * time.Minute

// checkHistory checks the run's history with porcupine against the model
// of a queue of p.bound records and, on a violation, writes the
// visualization and names it.
func checkHistory(t *testing.T, p *runPlan, rec *recorder) {
	t.Helper()
	ops := rec.history()
	model := queueModel(p.bound)
	res, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	counts := map[string]int{}
	for _, o := range ops {
		counts[describeKind(o)]++
	}
	t.Logf("seed %d: %d operations %v: %s", p.seed, len(ops), counts, res)
	if res == porcupine.Ok {
		return
	}
	path := filepath.Join(testenv.Artifacts(t, "torpor-history"), fmt.Sprintf("history-%d.html", p.seed))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("writing the visualization: %v", err)
	}
	t.Errorf("seed %d: the history is %s against the queue model (bound %d); plan: %v; visualization: %s; replay: HISTORY_SEED=%d",
		p.seed, res, p.bound, p, path, p.seed)
}

func describeKind(o porcupine.Operation) string {
	in, out := o.Input.(queueInput), o.Output.(queueOutput)
	switch {
	case out.unknown:
		return "unanswered"
	case strings.HasPrefix(out.answer, "unanswered"):
		return out.answer
	case in.kind == opEnqueue && out.queued:
		return "queued"
	case in.kind == opEnqueue:
		return "refused " + out.answer
	case in.kind == opPull:
		return "pull"
	}
	return "ack"
}

// sendOnce sends one request and turns its answer into the model's output;
// ok is false when the request cannot have reached the relay (connection
// refused), so that it is no operation at all.
func sendOnce(addr string, dev *did.PrivateKey, tok, id string) (out queueOutput, ok bool, bad string) {
	a, err := send(addr, dev.DID().String(), tok, body(id, 40))
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return out, false, ""
	case err != nil:
		return queueOutput{unknown: true}, true, ""
	case a.status == http.StatusServiceUnavailable && a.Queued:
		return queueOutput{queued: true, answer: "503 queued"}, true, ""
	case a.unconfirmed():
		// The store took it and did not confirm it: as a lost answer.
		return queueOutput{unknown: true}, true, ""
	case a.Queued:
		return queueOutput{unknown: true}, true, fmt.Sprintf("%s: %v queued but not 503", id, a)
	}
	what := a.Kind
	if what == "" {
		what, _, _ = strings.Cut(a.Message, ";")
	}
	out = queueOutput{answer: fmt.Sprintf("%d %s", a.status, what)}
	if a.status < 400 {
		bad = fmt.Sprintf("%s: %v, want an error status when nothing was queued", id, a)
	}
	return out, true, bad
}

// TestHistorySettlesUnanswered: recorder.history settles an unanswered
// enqueue by the pulls: one pulled returns, queued, when the first pull
// with it returned; one never pulled is a refusal. A settled history
// that breaks the queue's rules still fails the check.
func TestHistorySettlesUnanswered(t *testing.T) {
	r := &recorder{start: time.Now()}
	r.ops = []porcupine.Operation{
		{ClientId: 0, Input: queueInput{kind: opEnqueue, id: "lost"}, Call: 1, Output: queueOutput{unknown: true}, Return: unanswered},
		{ClientId: 1, Input: queueInput{kind: opEnqueue, id: "gone"}, Call: 2, Output: queueOutput{unknown: true}, Return: unanswered},
		{ClientId: 2, Input: queueInput{kind: opPull, max: 4}, Call: 3, Output: queueOutput{recs: []heldRecord{{1, "lost"}}}, Return: 4},
		{ClientId: 2, Input: queueInput{kind: opPull, max: 4}, Call: 5, Output: queueOutput{recs: []heldRecord{{1, "lost"}}}, Return: 6},
	}
	h := r.history()
	if o := h[0]; !o.Output.(queueOutput).queued || o.Return != 4 {
		t.Errorf("pulled unanswered enqueue settled as %+v returning %d; want queued, returning at the first pull's return 4", o.Output, o.Return)
	}
	if o := h[1]; o.Output.(queueOutput).queued || o.Output.(queueOutput).unknown {
		t.Errorf("never pulled unanswered enqueue settled as %+v; want a refusal", o.Output)
	}
	if !porcupine.CheckOperations(queueModel(2), h) {
		t.Error("the settled history is not linearizable")
	}
	// The same history where the device got "lost" under two seqs.
	r.ops[3].Output = queueOutput{recs: []heldRecord{{1, "lost"}, {2, "lost"}}}
	if porcupine.CheckOperations(queueModel(2), r.history()) {
		t.Error("a settled history with one request under two seqs passed the check")
	}
}
