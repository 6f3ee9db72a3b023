//go:build integration

package qemu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// vcpuSampleEvery is how often BenchmarkEmptyWakeVM reads the CPU time of
// QEMU's threads on the host.
const vcpuSampleEvery = 10 * time.Millisecond

// vcpuEdge is the interval on either side of a wake's boundaries over
// which BenchmarkEmptyWakeVM reports the vCPU's time (vcpu-before-ms and
// vcpu-after-ms): what a skew between the host's and the guest's clocks of
// that size could add to or take from vcpu-ms/wake.
const vcpuEdge = 50 * time.Millisecond

// vcpuWakes is the host's side of one build's wakes: the CPU time of the
// QEMU threads over the spans the guest's meter measured.
type vcpuWakes struct {
	N int
	// InWake is the vCPU's time inside the wakes, Cycle from the first
	// wake's start to the last one's end, Main the main loop's inside
	// the wakes.
	InWake, Cycle, Main time.Duration
	// Before and After are the vCPU's time in the vcpuEdge before each
	// wake's start and after its end.
	Before, After time.Duration
	// Idle is the vCPU's time over Idles intervals of a wake's length
	// in the middle of the sleeps between the measured wakes.
	Idle  time.Duration
	Idles int
	// Wall is the wakes' wall time, from each start to its end.
	Wall time.Duration
}

func (w vcpuWakes) add(v vcpuWakes) vcpuWakes {
	return vcpuWakes{N: w.N + v.N, InWake: w.InWake + v.InWake, Cycle: w.Cycle + v.Cycle, Main: w.Main + v.Main,
		Before: w.Before + v.Before, After: w.After + v.After, Idle: w.Idle + v.Idle, Idles: w.Idles + v.Idles, Wall: w.Wall + v.Wall}
}

// hostWakes reads s over spans, the wakes' boundaries on the guest's
// clock, which is offset behind the host's.
func hostWakes(s vm.CPUSamples, spans []wakemeter.Span, offset time.Duration) vcpuWakes {
	var w vcpuWakes
	for i, sp := range spans {
		t0, t1 := sp.Start.Add(offset), sp.End.Add(offset)
		vcpu, main := s.Between(t0, t1)
		w.N++
		w.Wall += t1.Sub(t0)
		w.InWake += vcpu
		w.Main += main
		before, _ := s.Between(t0.Add(-vcpuEdge), t0)
		after, _ := s.Between(t1, t1.Add(vcpuEdge))
		w.Before += before
		w.After += after
		if i+1 < len(spans) {
			// An interval as long as this wake, centred in the sleep after it.
			mid := t1.Add(spans[i+1].Start.Add(offset).Sub(t1) / 2)
			idle, _ := s.Between(mid.Add(-(t1.Sub(t0))/2), mid.Add(t1.Sub(t0)/2))
			w.Idle += idle
			w.Idles++
		}
	}
	if len(spans) > 0 {
		w.Cycle, _ = s.Between(spans[0].Start.Add(offset), spans[len(spans)-1].End.Add(offset))
	}
	return w
}

// report reports w per wake: vcpu-ms/wake, vcpu-cycle-ms/wake,
// qemu-main-ms/wake, wake-wall-ms/wake, vcpu-before-ms/wake, vcpu-after-ms/wake and
// vcpu-idle-ms/wake (per idle interval, when there was one).
func (w vcpuWakes) report(b *testing.B) {
	if w.N == 0 {
		return
	}
	n := float64(w.N)
	b.ReportMetric(msOf(w.InWake)/n, "vcpu-ms/wake")
	b.ReportMetric(msOf(w.Cycle)/n, "vcpu-cycle-ms/wake")
	b.ReportMetric(msOf(w.Main)/n, "qemu-main-ms/wake")
	b.ReportMetric(msOf(w.Wall)/n, "wake-wall-ms/wake")
	b.ReportMetric(msOf(w.Before)/n, "vcpu-before-ms/wake")
	b.ReportMetric(msOf(w.After)/n, "vcpu-after-ms/wake")
	if w.Idles > 0 {
		b.ReportMetric(msOf(w.Idle)/float64(w.Idles), "vcpu-idle-ms/wake")
	}
}

// reportVCPURatios reports tree's vCPU time per wake over base's, each
// summed over the rounds so far: vcpu-wake-ratio inside the wakes,
// vcpu-cycle-ratio over the cycle.
func reportVCPURatios(b *testing.B, base, tree vcpuWakes) {
	if base.N == 0 || tree.N == 0 || base.InWake == 0 || base.Cycle == 0 {
		return
	}
	per := func(d time.Duration, n int) float64 { return msOf(d) / float64(n) }
	b.ReportMetric(per(tree.InWake, tree.N)/per(base.InWake, base.N), "vcpu-wake-ratio")
	b.ReportMetric(per(tree.Cycle, tree.N)/per(base.Cycle, base.N), "vcpu-cycle-ratio")
}

// reportFloor reports the floor's CPU per wake against base's and tree's,
// each per wake over every round run so far: on the host,
// vcpu-floor-ratio (floor over base, inside the wake) and
// vcpu-tree-x-floor (tree over floor); in the guest, wake-cpu-floor-ratio
// and wake-cpu-tree-x-floor, the same of the guest's meter.
func reportFloor(b *testing.B, base, tree, floor vmWakes) {
	per := func(d time.Duration, n int) float64 { return msOf(d) / float64(n) }
	ratio := func(num, den time.Duration, nn, nd int, unit string) {
		if nn > 0 && nd > 0 && den > 0 {
			b.ReportMetric(per(num, nn)/per(den, nd), unit)
		}
	}
	ratio(floor.host.InWake, base.host.InWake, floor.host.N, base.host.N, "vcpu-floor-ratio")
	ratio(tree.host.InWake, floor.host.InWake, tree.host.N, floor.host.N, "vcpu-tree-x-floor")
	ratio(floor.guest.InWake, base.guest.InWake, floor.guest.N, base.guest.N, "wake-cpu-floor-ratio")
	ratio(tree.guest.InWake, floor.guest.InWake, tree.guest.N, floor.guest.N, "wake-cpu-tree-x-floor")
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sampleVCPU samples the CPU time of v's QEMU threads from its first
// console line (QEMU is up, its QMP socket open) to its RESULT line (the
// wakes are over).
func sampleVCPU(b *testing.B, ctx context.Context, v *vm.VM) vm.CPUSamples {
	b.Helper()
	if _, _, err := v.Await(ctx, 0, func(string) bool { return true }); err != nil {
		b.Fatalf("guest: %v", err)
	}
	s, err := v.SampleCPU(vcpuSampleEvery)
	if err != nil {
		b.Fatal(err)
	}
	_, _, err = v.Await(ctx, 0, func(l string) bool { return strings.Contains(l, "RESULT ") })
	samples, serr := s.Stop()
	if err != nil || serr != nil {
		b.Fatalf("guest: %v; sampling QEMU's threads: %v", err, serr)
	}
	return samples
}
