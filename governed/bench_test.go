package governed_test

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkReceive measures, side by side in one run, what a receiver
// spends per object: Parse (structure and RFC 8785 canonicalisation), the
// Ed25519 verification alone, the six checks on a parsed object, and Sign.
func BenchmarkReceive(b *testing.B) {
	k := didtest.Key(b, 1)
	o := mustSign(b, k, template001())
	raw := mustMarshal(b, o)
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		meter := benchcpu.Start(b)
		for b.Loop() {
			if _, err := governed.Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
		meter.Stop()
	})
	b.Run("signature", func(b *testing.B) {
		meter := benchcpu.Start(b)
		for b.Loop() {
			if err := o.VerifySignature(); err != nil {
				b.Fatal(err)
			}
		}
		meter.Stop()
	})
	b.Run("accept", func(b *testing.B) {
		r := &governed.Receiver{Purposes: []string{"comms:message"}, Clock: clocktest.New(issued)}
		meter := benchcpu.Start(b)
		for b.Loop() {
			if err := r.AcceptObject(o, governed.Input{Replay: admitAll{}}); err != nil {
				b.Fatal(err)
			}
		}
		meter.Stop()
	})
	b.Run("sign", func(b *testing.B) {
		meter := benchcpu.Start(b)
		for b.Loop() {
			if _, err := governed.Sign(k, template001()); err != nil {
				b.Fatal(err)
			}
		}
		meter.Stop()
	})
}

// admitAll is a replay cache that has seen nothing and records nothing, so
// the benchmark measures the checks rather than a map.
type admitAll struct{}

func (admitAll) Seen(string, string, time.Time) (bool, error) { return false, nil }
func (admitAll) Admit(string, string, time.Time) error        { return nil }
