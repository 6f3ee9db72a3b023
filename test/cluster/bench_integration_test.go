//go:build integration

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// benchSenders is how many senders (and raw publishers) run at once.
const benchSenders = 64

// benchBounds lifts the relays' bounds out of the way of a benchmark.
var benchBounds = []string{"--max-messages", "5000", "--max-per-peer", "5000", "--max-bytes", "1073741824"}

// BenchmarkFleetEnqueue measures, side by side in one run on one 3-node
// JetStream cluster (R3, file storage): the raw JetStream publish rate of
// 64 publishers (1 KiB, each waiting for its acknowledgement: the
// engine's ceiling), the rate of the relay's JetStream protocol without
// the relay (benchRawProtocol), then durable enqueues (503 queued answers) by 64
// senders through one torpor-relay on the bbolt store and through 1, 2
// and 3 relays with --store jetstream. Each sender sends 1 KiB requests to
// its own sleeping device. The relay sub-benchmarks report their rate
// over the raw rate (x-raw), over the protocol's (x-protocol) and over
// the bbolt relay's (x-bbolt); run
// them together (-bench FleetEnqueue), since the ratios use the earlier
// sub-benchmarks' rates. Nothing here asserts a timing (docs/performance.md).
func BenchmarkFleetEnqueue(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := jsserver.StartCluster(ctx, b.TempDir(), 3, jsserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer jsserver.Shutdown(ns)
	var urls []string
	for _, s := range ns {
		urls = append(urls, s.URL())
	}
	var raw, protocol, bolt float64
	b.Run("raw-publish", func(b *testing.B) { raw = benchRawPublish(b, urls) })
	b.Run("raw-protocol", func(b *testing.B) { protocol = benchRawProtocol(b, urls) })

	boltRelay := startRelay(b, b.TempDir(), append([]string{"--public-url", publicURL}, benchBounds...)...)
	devs := publishBenchDevices(b, boltRelay.addr, 0)
	b.Run("bbolt", func(b *testing.B) { bolt = benchSend(b, []*relayProc{boltRelay}, devs) })
	boltRelay.kill()

	js := append([]string{"--store", "jetstream", "--nats", strings.Join(urls, ","), "--public-url", publicURL}, benchBounds...)
	var relays []*relayProc
	for range 3 {
		relays = append(relays, startRelay(b, b.TempDir(), js...))
	}
	for k := 1; k <= 3; k++ {
		devs := publishBenchDevices(b, relays[0].addr, k)
		b.Run(fmt.Sprintf("relays-%d", k), func(b *testing.B) {
			rate := benchSend(b, relays[:k], devs)
			if raw > 0 && protocol > 0 && bolt > 0 { // all ran in this run (-bench selects them too)
				b.ReportMetric(rate/raw, "x-raw")
				b.ReportMetric(rate/protocol, "x-protocol")
				b.ReportMetric(rate/bolt, "x-bbolt")
			}
		})
	}
}

// publishBenchDevices publishes one sleeping device per sender through
// the relay at addr (set keeps the sub-benchmarks' devices apart) and
// returns their DIDs.
func publishBenchDevices(b *testing.B, addr string, set int) []string {
	var out []string
	for i := range benchSenders {
		dev := relaytest.Key(b, 6000+100*set+i)
		publish(b, addr, dev, device{mode: "sleep"})
		out = append(out, dev.DID().String())
	}
	return out
}

// benchSend runs b.N requests from 64 senders, sender i to devs[i], spread
// over addrs, each wanting 503 queued; it reports and returns enqueues/s.
func benchSend(b *testing.B, relays []*relayProc, devs []string) float64 {
	var addrs []string
	var pids []int
	for _, r := range relays {
		addrs, pids = append(addrs, r.addr), append(pids, r.Cmd.Process.Pid)
	}
	toks := make([]string, benchSenders)
	for i := range toks {
		toks[i] = relaytest.Token(b, relaytest.Key(b, 5000+i), publicURL)
	}
	payload := body("bench", 1024)
	return runSenders(b, pids, func(i int, n int64) error {
		a, err := send(addrs[int(n)%len(addrs)], devs[i], toks[i], payload)
		if err == nil && (a.status != http.StatusServiceUnavailable || !a.Queued) {
			err = fmt.Errorf("answer %v, want 503 queued", a)
		}
		return err
	})
}

// runSenders runs do from 64 goroutines until b.N calls were made (n
// counts them from 0) and reports the rate.
func runSenders(b *testing.B, pids []int, do func(i int, n int64) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	b.ResetTimer()
	meter := benchcpu.Start(b) // the embedded NATS servers' CPU among it
	for _, pid := range pids {
		meter.Add(pid)
	}
	start := time.Now()
	for i := range benchSenders {
		wg.Go(func() {
			for n := next.Add(1) - 1; n < int64(b.N); n = next.Add(1) - 1 {
				if err := do(i, n); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	meter.Stop()
	if first != nil {
		b.Fatal(first)
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "ops/s")
	return rate
}

// jetStreams connects to each server of urls, one connection each, closed
// when the benchmark ends.
func jetStreams(b *testing.B, urls []string) []jetstream.JetStream {
	var jss []jetstream.JetStream
	for _, u := range urls {
		nc, err := nats.Connect(u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		jss = append(jss, js)
	}
	return jss
}

// benchRawPublish publishes 1 KiB messages to an R3 stream on file
// storage from 64 publishers, each waiting for its acknowledgement, over
// one connection to each server; it returns publishes/s.
func benchRawPublish(b *testing.B, urls []string) float64 {
	ctx := context.Background()
	jss := jetStreams(b, urls)
	cfg := jetstream.StreamConfig{Name: "BENCH_RAW", Subjects: []string{"bench.raw.>"}, Replicas: 3, Storage: jetstream.FileStorage}
	if _, err := jss[0].CreateOrUpdateStream(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	return runSenders(b, nil, func(i int, _ int64) error {
		_, err := jss[i%len(jss)].Publish(ctx, fmt.Sprintf("bench.raw.%d", i), payload)
		return err
	})
}

// benchRawProtocol runs what store/jsstore does for one enqueue when its
// view of the device's queue is current, without the relay, from 64
// publishers, publisher i on its own subject (its own device): publish
// the 1 KiB record with Nats-Expected-Last-Subject-Sequence set to the
// stream sequence of the publisher's previous one (0 for the first), R3
// on file storage. It returns enqueues/s.
func benchRawProtocol(b *testing.B, urls []string) float64 {
	ctx := context.Background()
	jss := jetStreams(b, urls)
	if _, err := jss[0].CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCH_REC", Subjects: []string{"bench.rec.>"},
		Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	last := make([]uint64, benchSenders) // publisher i's alone
	return runSenders(b, nil, func(i int, _ int64) error {
		ack, err := jss[i%len(jss)].Publish(ctx, fmt.Sprint("bench.rec.", i), payload, jetstream.WithExpectLastSequencePerSubject(last[i]))
		if err == nil {
			last[i] = ack.Sequence
		}
		return err
	})
}
