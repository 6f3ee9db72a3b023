//go:build integration

package qemu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
)

// memorySplit is what an agent's resident memory was made of while it
// drained, and asleep after: /proc/PID/status sampled every
// footprintSampleEvery (natively; in the guest test/qemu/guest/footprint
// samples) from its start to the last delivery, /proc/PID/smaps at the
// last delivery, the Go heap as the garbage collector reported it at each
// cycle (GODEBUG=gctrace=1, whole MiB, on the agent's stderr), and
// /proc/PID/status again once the wake ended and the agent slept.
type memorySplit struct {
	peak             procs.Memory // the sample with the most VmRSS: RssAnon and RssFile at that moment
	maxAnon, maxFile int64        // the most any sample saw of each
	samples          int
	binary           procs.Resident // the agent binary's mappings at the end (its written data is Anon)
	db               procs.Resident // agent.db's mapping (bbolt) at the end
	cpu              time.Duration  // the agent's CPU from its start to the last delivery (schedstat); 0 in the guest
	gc               procs.GCTrace  // to the end of the wake (in the guest) or of the agent (natively)
	// asleep is the agent's memory asleep, footprintSettle after its
	// wake ended (zero if it did not end).
	asleep procs.Memory
}

// footprintSampleEvery is how often the sampler reads /proc/PID/status.
const footprintSampleEvery = 2 * time.Millisecond

// footprintSettle is how long after the end of its wake the agent's
// memory asleep is read: the Go runtime's background scavenger returns
// the heap the drain freed to the kernel within it. The guest program
// waits as long (asleepSettle).
const footprintSettle = 5 * time.Second

// wakeEnded matches the agent's log line at the end of a wake
// (runtime.WakeReport's log): after it, the agent sleeps.
var wakeEnded = regexp.MustCompile(`(?m)msg=wake `)

// readAsleep waits until the agent's log at path says its wake ended (or
// ctx ends), then footprintSettle, and reads the memory of pid.
func readAsleep(ctx context.Context, pid int, path string) (procs.Memory, error) {
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return procs.Memory{}, err
		}
		if wakeEnded.Match(b) {
			break
		}
		select {
		case <-ctx.Done():
			return procs.Memory{}, fmt.Errorf("the agent's wake did not end: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return procs.Memory{}, ctx.Err()
	case <-time.After(footprintSettle):
	}
	return procs.ReadMemory(pid)
}

// guestSplit is the memorySplit test/qemu/guest/footprint reported.
func guestSplit(r report.Footprint) *memorySplit {
	return &memorySplit{peak: r.PeakSample, maxAnon: r.PeakSample.Anon, maxFile: r.PeakSample.File + r.PeakSample.Shmem,
		binary: procs.Resident{RSS: r.BinaryKiB << 10}, db: procs.Resident{RSS: r.DBKiB << 10}, gc: r.GC, asleep: r.Asleep}
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
		"Go heap at most %d MiB at a cycle's start, %d MiB live, goal %d MiB (%d cycles); CPU %v; asleep %s (anon %s, file %s)",
		mib(sp.peak.RSS), mib(sp.peak.Anon), mib(sp.peak.File+sp.peak.Shmem), sp.samples, mib(sp.maxAnon), mib(sp.maxFile),
		mib(sp.binary.RSS), mib(sp.binary.Anon), mib(sp.db.RSS),
		sp.gc.MaxHeap, sp.gc.MaxLive, sp.gc.MaxGoal, sp.gc.Cycles, sp.cpu.Round(time.Millisecond),
		mib(sp.asleep.RSS), mib(sp.asleep.Anon), mib(sp.asleep.File+sp.asleep.Shmem))
}
