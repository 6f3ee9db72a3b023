//go:build integration

package mqtt

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/mqtt/command"
)

// BenchmarkCommandRoundTrip measures one command from Send to the verified
// reply on each broker (loopback), and BenchmarkBacklog the time from a
// wake to the last reply of 50 commands queued while the device slept.
// Both are dominated by bbolt commits (about five fsyncs per command).
func BenchmarkCommandRoundTrip(b *testing.B) {
	for _, br := range brokers {
		b.Run(br.name, func(b *testing.B) {
			d := newDevice(b, br.start(b))
			d.wake()
			op := d.operator()
			for b.Loop() {
				d.seq++
				s, err := op.Send(ctxT(b), name, command.Spec{Device: d.key.DID(), Seq: d.seq, Op: command.OpStatus}, false)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := op.AwaitReply(ctxT(b), name, s.Object.ID, d.key.DID()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBacklog(b *testing.B) {
	const n = 50
	for _, br := range brokers {
		b.Run(br.name, func(b *testing.B) {
			d := newDevice(b, br.start(b))
			d.wake()
			for b.Loop() {
				b.StopTimer()
				d.sleep(start.Add(time.Hour))
				var ids []string
				for range n {
					ids = append(ids, d.send(command.OpStatus, nil))
				}
				b.StartTimer()
				d.wake()
				for _, id := range ids {
					d.reply(id)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/n, "ms/command")
		})
	}
}
