package manage_test

import (
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// BenchmarkCommandRoundTrip measures one command from the operator's
// Send to the verified reply, against the embedded broker on loopback:
// signing, the six receiver checks, the admission transaction (replay,
// sequence, ledger reservation; one fsync), the completion transaction
// with the queued reply (one fsync), the reply's session write and removal
// (two more), and the broker both ways. The fake clock does not move:
// the commands stay well inside their lifetime.
func BenchmarkCommandRoundTrip(b *testing.B) {
	for _, enc := range []struct {
		name string
		cbor bool
	}{{"json", false}, {"cbor", true}} {
		b.Run(enc.name, func(b *testing.B) {
			h := newHarness(b, mqtttest.StartEmbedded(b, nil))
			h.Wake()
			op := h.Operator()
			meter := benchcpu.Start(b)
			for b.Loop() {
				h.Seq++
				s, err := op.Send(ctxT(b), h.Name, command.Spec{Device: h.Key.DID(), Seq: h.Seq, Op: command.OpStatus}, enc.cbor)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := op.AwaitReply(ctxT(b), h.Name, s.Object.ID, h.Key.DID()); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}
