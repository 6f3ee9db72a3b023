package procs

import "testing"

// TestGCTraceAdd sums gctrace lines as the Go runtime prints them and
// passes over every other line.
func TestGCTraceAdd(t *testing.T) {
	lines := []struct {
		line string
		gc   bool
	}{
		{"gc 1 @0.010s 2%: 0.013+0.61+0.003 ms clock, 0.026+0.10/0.52/0.28+0.007 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P", true},
		{`time=2026-12-06T06:40:00Z level=INFO msg=wake reason=boot`, false},
		{"gc 2 @0.200s 3%: 0.01+1.2+0.01 ms clock, 0.02+0.5/1.1/0.2+0.02 ms cpu, 6->7->3 MB, 7 MB goal, 0 MB stacks, 0 MB globals, 2 P", true},
		{"gc 3 @0.300s 3%: 0.01+1.2+0.01 ms clock, 0.02+0.5/1.1/0.2+0.02 ms cpu, 5->5->2 MB, 6 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)", true},
		{"scvg: 1 MB released", false},
	}
	var g GCTrace
	for _, l := range lines {
		if got := g.Add(l.line); got != l.gc {
			t.Errorf("Add(%q) = %v, want %v", l.line, got, l.gc)
		}
	}
	want := GCTrace{Cycles: 3, MaxHeap: 6, MaxLive: 3, MaxGoal: 7, Live: 2}
	if g != want {
		t.Errorf("after the lines: %+v, want %+v", g, want)
	}
}
