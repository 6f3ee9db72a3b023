//go:build integration

package tenants

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/transport/bearer"
)

const (
	// noisyFlooders is how many of tenant a's senders post at once, each
	// as fast as its answers come back, to noisyDevices of a's devices.
	noisyFlooders = 64
	noisyDevices  = 4
	// quietSenders of tenant b post in turn, each every quietInterval:
	// 50 requests a second together, to one of b's devices.
	quietSenders  = 4
	quietInterval = 80 * time.Millisecond
	// noisyRounds is how many rounds the phases take turns in, so that a
	// change in the machine's load falls on both alike.
	noisyRounds = 4
)

// BenchmarkNoisyNeighbour measures what tenant a's flood does to tenant
// b's senders on one hosted relay (docs/tenants.md): the real
// torpor-relay with --tenants (a and b, neither with a rate quota, so
// a's flood is all queued), b's quietSenders posting b.N requests at a
// modest pace to b's sleeping device, first alone, then while
// noisyFlooders of a's senders post as fast as they are answered; after
// each, b's device drains its b.N records over its link (with a's flood
// still running in the second phase). The two phases take turns in
// noisyRounds rounds. It runs twice, each time with a relay of its own:
// with --tenant-inflight so high that it bounds nothing
// (inflight=unbounded: the relay before the bound) and with the default
// of 8 (docs/tenants.md, "Noisy neighbours"). It reports b's latency
// percentiles (b-alone-p50-ms, b-beside-a-p99-ms, …), b's p99 beside a
// over alone (p99-x-alone, the goal is <= 2), b's drain time, the
// relay's answers per second and its CPU per answer in each phase
// (/proc/PID/task/*/schedstat), and cpu-ns/op for the relay and this
// process together per b answer (internal/benchcpu). scripts/bench.sh
// prints them with the load average.
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, inFlight := range []string{"1000000", "8"} {
		name := "inflight=" + inFlight
		if inFlight == "1000000" {
			name = "inflight=unbounded"
		}
		b.Run(name, func(b *testing.B) { noisyNeighbour(b, inFlight) })
	}
}

func noisyNeighbour(b *testing.B, inFlight string) {
	w := newHostedWorld(b, `{}`, `{}`, "--tenant-inflight", inFlight, "--max-messages", "100000000", "--max-per-peer", "100000000",
		"--max-bytes", "1099511627776", "--max-peer-bytes", "1099511627776", "--max-queue-bytes", "0")
	var devsA []*did.PrivateKey
	for range noisyDevices {
		devsA = append(devsA, w.enrol(b, "ownerA"))
	}
	devB := w.enrol(b, "ownerB")
	w.relay.Next(b, noisyDevices+1, "agent admitted by its owner's enrolment")
	for _, d := range append(slices.Clone(devsA), devB) {
		relaytest.Publish(b, w.relay.URL, d, "sleep") // the admitted device's bounds, not probation's
	}
	n := newNoisy(b, w.relay.URL, devsA, devB)
	n.pid = w.relay.Cmd.Process.Pid
	b.ResetTimer()
	meter := benchcpu.Start(b)
	meter.Add(n.pid)
	alone, beside := &noisyPhase{name: "alone"}, &noisyPhase{name: "beside-a"}
	for r := range noisyRounds {
		k := (r+1)*b.N/noisyRounds - r*b.N/noisyRounds
		n.phase(b, alone, r, k, false)
		n.phase(b, beside, r, k, true)
	}
	b.StopTimer()
	meter.Stop()
	for _, p := range []*noisyPhase{alone, beside} {
		slices.Sort(p.lat)
		p.report(b)
	}
	if a := alone.percentile(0.99); a > 0 {
		b.ReportMetric(float64(beside.percentile(0.99))/float64(a), "p99-x-alone")
	}
}

// noisy is BenchmarkNoisyNeighbour's senders: a's flooders and b's quiet
// ones, each with its own key and DID Bearer token, and one HTTP client
// with a connection for each.
type noisy struct {
	url        string
	devsA      []*did.PrivateKey
	devB       *did.PrivateKey
	pid        int
	tokA, tokB []string
	client     *http.Client
}

func newNoisy(b *testing.B, url string, devsA []*did.PrivateKey, devB *did.PrivateKey) *noisy {
	n := &noisy{url: url, devsA: devsA, devB: devB,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: noisyFlooders + quietSenders}, Timeout: time.Minute}}
	tokens := func(k int) (out []string) {
		for range k {
			key := didtest.New(b)
			tok, err := bearer.Issue(key, url, time.Now(), 10*time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, bearer.Authorization(tok))
		}
		return out
	}
	n.tokA, n.tokB = tokens(noisyFlooders), tokens(quietSenders)
	return n
}

// noisyPhase is what one phase measured over its rounds.
type noisyPhase struct {
	name      string
	lat       []time.Duration // b's answers
	answersA  int64           // a's answers from b's first request to the drain's end
	wall, cpu time.Duration   // the relay's, over the same spans
	drain     time.Duration
}

// phase runs k of b's requests in round r, with a's flood when flood is
// set, then drains b's device, checks that it got every record, and adds
// what it measured to p.
func (n *noisy) phase(b *testing.B, p *noisyPhase, r, k int, flood bool) {
	name := fmt.Sprintf("%s-%d", p.name, r)
	stop := make(chan struct{})
	var floods sync.WaitGroup
	var failed atomic.Pointer[error]
	var answersA int64
	if flood {
		started := make(chan struct{})
		n.flood(&floods, stop, started, &answersA, &failed, name)
		<-started
	}
	a0, cpu0 := atomic.LoadInt64(&answersA), relayCPU(b, n.pid)
	t0 := time.Now()
	p.lat = append(p.lat, n.quiet(b, name, k)...)
	d0 := time.Now()
	got := 0
	if err := relaytest.Drain(n.url, n.devB, func(bodies [][]byte) { got += len(bodies) }); err != nil {
		b.Fatalf("%s: b's device drains: %v", name, err)
	}
	p.drain, p.wall = p.drain+time.Since(d0), p.wall+time.Since(t0)
	p.cpu, p.answersA = p.cpu+relayCPU(b, n.pid)-cpu0, p.answersA+atomic.LoadInt64(&answersA)-a0
	close(stop)
	floods.Wait()
	if e := failed.Load(); e != nil {
		b.Fatalf("%s: a's flood: %v", name, *e)
	}
	if got != k {
		b.Fatalf("%s: b's device drained %d records, b's senders were answered %d queued", name, got, k)
	}
}

func relayCPU(b *testing.B, pid int) time.Duration {
	cpu, err := wakemeter.TaskCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// flood starts a's senders, which post until stop is closed; started is
// closed once every one of them has had an answer.
func (n *noisy) flood(wg *sync.WaitGroup, stop, started chan struct{}, answers *int64, failed *atomic.Pointer[error], name string) {
	var first sync.WaitGroup
	first.Add(noisyFlooders)
	for k := range noisyFlooders {
		wg.Go(func() {
			dev := n.devsA[k%len(n.devsA)].DID()
			for i := 0; ; i++ {
				if i == 1 {
					first.Done()
				}
				select {
				case <-stop:
					return
				default:
				}
				body := relaytest.Body(fmt.Sprintf("%s-a%d-%d", name, k, i), "x")
				if err := n.post(dev, n.tokA[k], body); err != nil {
					failed.CompareAndSwap(nil, &err)
					if i == 0 {
						first.Done()
					}
					return
				}
				atomic.AddInt64(answers, 1)
			}
		})
	}
	go func() { first.Wait(); close(started) }()
}

// quiet runs b's senders: each posts its share of count requests, one every
// quietInterval (or as soon as the previous answer came, when later), and
// returns the latencies of their answers.
func (n *noisy) quiet(b *testing.B, name string, count int) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for k := range quietSenders {
		wg.Go(func() {
			tick := time.NewTicker(quietInterval)
			defer tick.Stop()
			for i := k; i < count; i += quietSenders {
				body := relaytest.Body(fmt.Sprintf("%s-b-%d", name, i), "x")
				t0 := time.Now()
				err := n.post(n.devB.DID(), n.tokB[k], body)
				d := time.Since(t0)
				mu.Lock()
				lat, errs = append(lat, d), append(errs, err)
				mu.Unlock()
				<-tick.C
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatalf("%s: b's sender: %v", name, err)
		}
	}
	return lat
}

// post sends one request and checks that it was queued: 503 agent_asleep
// with "queued":true (transport/relay/answers.go).
func (n *noisy) post(dev did.DID, auth, body string) error {
	status, got, err := relaytest.Exchange(n.client, n.url+"/a/"+dev.String()+"/a2a/jsonrpc", auth, []byte(body))
	if err != nil {
		return err
	}
	if status != http.StatusServiceUnavailable || !bytes.Contains(got, []byte(`"queued":true`)) {
		return fmt.Errorf("answer %d %s, want 503 queued", status, got)
	}
	return nil
}

// percentile returns the q-quantile of the sorted latencies (nearest
// rank).
func (p *noisyPhase) percentile(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(p.lat)))) - 1
	return p.lat[max(i, 0)]
}

func (p *noisyPhase) report(b *testing.B) {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(p.percentile(0.5)), "b-"+p.name+"-p50-ms")
	b.ReportMetric(ms(p.percentile(0.99)), "b-"+p.name+"-p99-ms")
	b.ReportMetric(ms(p.drain), "b-"+p.name+"-drain-ms")
	answers := float64(int64(len(p.lat)) + p.answersA)
	b.ReportMetric(answers/p.wall.Seconds(), p.name+"-answers/s")
	b.ReportMetric(float64(p.cpu.Nanoseconds())/1e3/answers, p.name+"-relay-cpu-µs/answer")
}
