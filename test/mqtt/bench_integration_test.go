//go:build integration

package mqtt

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// BenchmarkCommandRoundTrip measures one command from Send to the verified
// reply on each broker (loopback), and BenchmarkBacklog the time from a
// wake to the last reply of 50 commands queued while the device slept.
// Both are dominated by bbolt commits (about five fsyncs per command).
func BenchmarkCommandRoundTrip(b *testing.B) {
	for _, br := range brokers {
		b.Run(br.name, func(b *testing.B) {
			d := newDevice(b, br.start(b))
			d.Wake()
			op := d.Operator()
			meter := startMeter(b, d)
			for b.Loop() {
				d.Seq++
				s, err := op.Send(ctxT(b), name, command.Spec{Device: d.Key.DID(), Seq: d.Seq, Op: command.OpStatus}, false)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := op.AwaitReply(ctxT(b), name, s.Object.ID, d.Key.DID()); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}

func BenchmarkBacklog(b *testing.B) {
	const n = 50
	for _, br := range brokers {
		b.Run(br.name, func(b *testing.B) {
			d := newDevice(b, br.start(b))
			d.Wake()
			meter := startMeter(b, d)
			for b.Loop() {
				b.StopTimer()
				meter.Pause()
				d.Sleep(start.Add(time.Hour))
				var ids []string
				for range n {
					ids = append(ids, d.send(command.OpStatus, nil))
				}
				meter.Resume()
				b.StartTimer()
				d.Wake()
				for _, id := range ids {
					d.Reply(id)
				}
			}
			meter.Stop()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/n, "ms/command")
		})
	}
}

// startMeter starts measuring CPU (benchcpu): this process's, and
// mosquitto's when d's broker is one.
func startMeter(b *testing.B, d *device) *benchcpu.Meter {
	m := benchcpu.Start(b)
	if p, ok := d.Broker.(*mqtttest.Mosquitto); ok && p.Pid() != 0 {
		m.Add(p.Pid())
	}
	return m
}
