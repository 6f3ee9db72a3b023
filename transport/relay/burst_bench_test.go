package relay

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// BenchmarkWakeBurst is the relay's work in the busiest second of a fleet
// of hourly_wake devices (wake.BenchmarkWakeStorm): devices links that
// arrive at once, each a whole empty wake as the agent does it: the link
// (WebSocket upgrade, DID Bearer token, the signed handshake), one state
// frame (mode, window, signed card), a drain that finds nothing queued,
// and the close. The burst sizes are the busiest second of 10,000 and
// 100,000 devices with the seconds the relay assigns (4 and 30:
// wake.BenchmarkWakeStorm), with the wake second each derives (11
// and 48), and without either, when every device of a minute links at
// its :00 (198 and 1,751). Reported:
// the time until the burst's last wake completed (burst-ms; the relay
// keeps up when it is under a second, before the next second's devices
// arrive), links per second over the burst, and each device's p50 and
// p99 wake time. The devices run in the same process on the same cores
// (their Ed25519 signatures included), so the figures bound the relay's
// own cost from above.
func BenchmarkWakeBurst(b *testing.B) {
	for _, n := range []int{4, 30, 11, 48, 198, 1751} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { benchWakeBurst(b, n) })
	}
}

func benchWakeBurst(b *testing.B, n int) {
	h := newHarness(b, func(c *Config) { c.Access.AdmitAll = true }) // an admitted fleet: not the probation pool under test
	keys := make([]*did.PrivateKey, n)
	states := make([]wire.State, n)
	var hello queuebounds.Bounds
	for i := range keys {
		var seed [8]byte
		binary.BigEndian.PutUint64(seed[:], uint64(i))
		s := sha256.Sum256(seed[:])
		k, err := did.NewKeyFromSeed(s[:])
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
		if i == 0 {
			hello = h.device(b, k, "hourly_wake", deviceOpts{}).Hello()
		}
		states[i] = h.state(b, k, hello, "hourly_wake", deviceOpts{})
	}
	var total time.Duration
	lat := make([]time.Duration, 0, n*b.N)
	b.ResetTimer()
	meter := benchcpu.Start(b)
	for range b.N {
		d, l := burst(b, h, keys, states)
		total += d
		lat = append(lat, l...)
	}
	meter.Stop()
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	per := total / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "burst-ms")
	b.ReportMetric(float64(n)/per.Seconds(), "links/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// burst runs one empty wake per key at once and returns the time until the
// last one completed and each one's duration.
func burst(b *testing.B, h *harness, keys []*did.PrivateKey, states []wire.State) (time.Duration, []time.Duration) {
	lat := make([]time.Duration, len(keys))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, k := range keys {
		wg.Go(func() {
			<-gate
			t0 := time.Now()
			if err := emptyWake(h, k, states[i]); err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(t0)
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	return time.Since(start), lat
}

// emptyWake is a device's wake with nothing queued: link, state, drain,
// close.
func emptyWake(h *harness, k *did.PrivateKey, st wire.State) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: h.srv.URL, Key: k, Clock: h.clk})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Publish(ctx, st); err != nil {
		return err
	}
	n, err := c.Drain(ctx, 64, func(context.Context, []wire.Record) error { return nil })
	if err == nil && n != 0 {
		err = fmt.Errorf("drained %d records, want none", n)
	}
	return err
}
