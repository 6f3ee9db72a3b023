//go:build integration

package qemu

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/procs"
)

// memorySplit is what a native agent's resident memory was made of while
// it drained: /proc/PID/status sampled every footprintSampleEvery from
// its start to the last delivery, /proc/PID/smaps at the last delivery,
// and the Go heap as the garbage collector reported it at each cycle
// (GODEBUG=gctrace=1, whole MiB, on the agent's stderr).
type memorySplit struct {
	peak             procs.Memory // the sample with the most VmRSS: RssAnon and RssFile at that moment
	maxAnon, maxFile int64        // the most any sample saw of each
	samples          int
	binary           procs.Resident // the agent binary's mappings at the end (its written data is Anon)
	db               procs.Resident // agent.db's mapping (bbolt) at the end
	cpu              time.Duration  // the agent's CPU from its start to the last delivery (schedstat)
	gc               gcTrace
}

// footprintSampleEvery is how often the sampler reads /proc/PID/status.
const footprintSampleEvery = 2 * time.Millisecond

// gcTrace sums the agent's gctrace lines.
type gcTrace struct {
	cycles  int
	maxHeap int // MiB: the most heap in use at the start of a cycle
	maxLive int // MiB: the most heap marked live at the end of one
	maxGoal int // MiB: the highest heap goal
}

// gcLine matches the heap figures of a gctrace line (runtime's mgc.go:
// "… ms cpu, 4->4->1 MB, 5 MB goal, …").
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// readGCTrace reads the gctrace lines of the agent's log at path.
func readGCTrace(path string) (gcTrace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return gcTrace{}, err
	}
	var g gcTrace
	for l := range strings.SplitSeq(string(b), "\n") {
		m := gcLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n := make([]int, 4)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		g.cycles++
		g.maxHeap, g.maxLive, g.maxGoal = max(g.maxHeap, n[0]), max(g.maxLive, n[2]), max(g.maxGoal, n[3])
	}
	return g, nil
}

// finishSplit completes what the sampler s saw of the agent running bin
// with its data in data: smaps and CPU are read now (at the last
// delivery), the gctrace once the agent stopped (finishGC).
func finishSplit(s *procs.MemorySampler, pid int, bin, data string) (*memorySplit, error) {
	sp := &memorySplit{}
	sp.peak, sp.maxAnon, sp.maxFile, sp.samples = s.Stop()
	maps, err := procs.Mappings(pid)
	if err != nil {
		return nil, err
	}
	sp.binary = maps[bin]
	sp.db = maps[filepath.Join(data, "agent.db")]
	if sp.cpu, err = wakemeter.TaskCPU(pid); err != nil {
		return nil, err
	}
	return sp, nil
}

func (sp *memorySplit) String() string {
	return fmt.Sprintf("peak sample %s (anon %s, file %s; %d samples, most anon %s, most file %s); at the end the binary %s (%s of it anon), agent.db %s; "+
		"Go heap at most %d MiB at a cycle's start, %d MiB live, goal %d MiB (%d cycles); CPU %v",
		mib(sp.peak.RSS), mib(sp.peak.Anon), mib(sp.peak.File), sp.samples, mib(sp.maxAnon), mib(sp.maxFile),
		mib(sp.binary.RSS), mib(sp.binary.Anon), mib(sp.db.RSS),
		sp.gc.maxHeap, sp.gc.maxLive, sp.gc.maxGoal, sp.gc.cycles, sp.cpu.Round(time.Millisecond))
}
