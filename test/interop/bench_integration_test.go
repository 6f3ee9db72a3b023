//go:build integration

package interop

import (
	"context"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/test/interop/tsmls"
)

// The benchmarks put every MLS stack's figure for the same operation side
// by side in one run (`make bench`), as sub-benchmarks of one Benchmark
// function, and log each stack's ratio to the first. A stack is a function
// that runs b.N operations and returns its ns/op: ts-mls measures inside
// its own process (the JSON-lines round trip is not counted); a Go stack
// returns float64(b.Elapsed()) / float64(b.N).

type stack struct {
	name string
	run  func(b *testing.B) float64
}

// runSideBySide runs each stack as a sub-benchmark, reports its ns/op and
// logs the ratios to the first stack.
func runSideBySide(b *testing.B, stacks []stack) {
	nsPerOp := map[string]float64{}
	for _, s := range stacks {
		b.Run(s.name, func(b *testing.B) {
			ns := s.run(b)
			b.ReportMetric(ns, "ns/op")
			nsPerOp[s.name] = ns
			// The ratio as a metric too: a parent benchmark's logs show
			// only with -v, and `make bench` runs without.
			if base := nsPerOp[stacks[0].name]; s.name != stacks[0].name && base > 0 {
				b.ReportMetric(ns/base, "ratio-to-"+stacks[0].name)
			}
		})
	}
	base, ok := nsPerOp[stacks[0].name]
	if !ok || base == 0 {
		return
	}
	for _, s := range stacks[1:] {
		if ns, ok := nsPerOp[s.name]; ok {
			b.Logf("%s/%s = %.2f", s.name, stacks[0].name, ns/base)
		}
	}
}

// tsmlsStack measures kind inside a ts-mls peer started once for the
// benchmark function, and warmed up with one untimed operation so that
// start-up and JIT compilation stay out of the figures.
func tsmlsStack(b *testing.B, kind tsmls.BenchKind, size int) stack {
	p := tsmls.StartT(b, nil)
	if _, err := p.Bench(context.Background(), kind, 1, size); err != nil {
		b.Fatalf("ts-mls bench %s warm-up: %v", kind, err)
	}
	return stack{"ts-mls", func(sb *testing.B) float64 {
		meter := benchcpu.Start(sb) // Node's CPU, and this process's
		meter.Add(p.Pid())
		r, err := p.Bench(context.Background(), kind, sb.N, size)
		if err != nil {
			sb.Fatalf("ts-mls bench %s: %v", kind, err)
		}
		meter.Stop()
		return r.NsPerOp
	}}
}

// BenchmarkPairSession measures pair-session establishment
// (draft-chapman-a2a-mls-03 Section 6.2): the initiator decodes the
// joiner's published KeyPackage, creates the group, commits the Add; the
// Welcome and the out-of-band ratchet tree are encoded, decoded, and the
// joiner joins. The joiner's KeyPackage is made outside the timing.
func BenchmarkPairSession(b *testing.B) {
	runSideBySide(b, []stack{
		tsmlsStack(b, tsmls.BenchPairSession, 0),
		torporPairStack(),
		torporSessionPairStack(),
	})
}

// BenchmarkMessage1KiB measures one 1 KiB application message encrypted,
// encoded, decoded and decrypted between the two members of a pair session.
func BenchmarkMessage1KiB(b *testing.B) {
	runSideBySide(b, []stack{
		tsmlsStack(b, tsmls.BenchMessage, 1024),
		torporMessageStack(1024),
		torporSessionMessageStack(1024),
	})
}
