package procs

import (
	"os"
	"regexp"
	"strconv"
	"strings"
)

// GCTrace sums the lines a Go program prints on its stderr with
// GODEBUG=gctrace=1, one per garbage collection (the runtime package's
// documentation, "GODEBUG"), in whole MiB as the runtime prints them.
type GCTrace struct {
	Cycles  int `json:"cycles"`
	MaxHeap int `json:"max_heap_mib"` // the most heap in use at the start of a cycle
	MaxLive int `json:"max_live_mib"` // the most heap marked live at the end of one
	MaxGoal int `json:"max_goal_mib"` // the highest heap goal
	Live    int `json:"live_mib"`     // the heap marked live by the last cycle
}

// gcLine matches the heap figures of a gctrace line (the runtime's mgc.go:
// "… ms cpu, 4->4->1 MB, 5 MB goal, …").
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// Add counts line if it is a gctrace line and reports whether it was.
func (g *GCTrace) Add(line string) bool {
	m := gcLine.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	n := make([]int, 4)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	g.Cycles++
	g.MaxHeap, g.MaxLive, g.MaxGoal = max(g.MaxHeap, n[0]), max(g.MaxLive, n[2]), max(g.MaxGoal, n[3])
	g.Live = n[2]
	return true
}

// ReadGCTrace sums the gctrace lines of the log at path.
func ReadGCTrace(path string) (GCTrace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return GCTrace{}, err
	}
	var g GCTrace
	for l := range strings.SplitSeq(string(b), "\n") {
		g.Add(l)
	}
	return g, nil
}
