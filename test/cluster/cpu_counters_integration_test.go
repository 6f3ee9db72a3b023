//go:build integration

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// procCounters are counters of the nats-servers' system calls and
// scheduling over a side's rounds of BenchmarkEnqueueCPU: how the
// messages arrive (one read system call takes in all the bytes waiting
// on a connection, so fewer bytes a read means the publishes came
// spread out) and how often the servers' threads slept.
type procCounters struct {
	reads     int64 // read system calls (syscr of /proc/PID/io, proc(5))
	readBytes int64 // bytes they read (rchar)
	switches  int64 // voluntary context switches, summed over the threads
	writes    int64 // write system calls (syscw)
}

// readProcCounters reads pid's procCounters.
func readProcCounters(pid int) (procCounters, error) {
	var c procCounters
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return c, err
	}
	for line := range strings.Lines(string(raw)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			c.reads = n
		case "rchar":
			c.readBytes = n
		case "syscw":
			c.writes = n
		}
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that exited
		}
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				c.switches += n
			}
		}
	}
	return c, nil
}

// serverCounters sums the procCounters of pids.
func serverCounters(b *testing.B, pids []int) procCounters {
	var sum procCounters
	for _, pid := range pids {
		c, err := readProcCounters(pid)
		if err != nil {
			b.Fatal(err)
		}
		sum = sum.add(c)
	}
	return sum
}

func (c procCounters) add(o procCounters) procCounters {
	return procCounters{c.reads + o.reads, c.readBytes + o.readBytes, c.switches + o.switches, c.writes + o.writes}
}

func (c procCounters) sub(o procCounters) procCounters {
	return procCounters{c.reads - o.reads, c.readBytes - o.readBytes, c.switches - o.switches, c.writes - o.writes}
}

// report reports c over ops enqueues of the side name: the servers'
// reads per enqueue (NAME-srv-reads/op), bytes per read
// (NAME-srv-B/read) and voluntary context switches per enqueue
// (NAME-srv-sleeps/op).
func (c procCounters) report(b *testing.B, name string, ops int) {
	b.ReportMetric(float64(c.reads)/float64(ops), name+"-srv-reads/op")
	b.ReportMetric(float64(c.readBytes)/float64(max(c.reads, 1)), name+"-srv-B/read")
	b.ReportMetric(float64(c.switches)/float64(ops), name+"-srv-sleeps/op")
}
