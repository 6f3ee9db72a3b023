package procs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a process's resident memory as its /proc/PID/status reports
// it (proc(5)), in bytes: RSS = Anon + File + Shmem.
type Memory struct {
	RSS   int64 // VmRSS: resident now
	HWM   int64 // VmHWM: the most RSS has been
	Anon  int64 // RssAnon: heap, stacks, written data of the binary
	File  int64 // RssFile: file-backed pages: the binary's code and read-only data, mmapped files (bbolt)
	Shmem int64 // RssShmem
}

// ReadMemory reads the live process pid's Memory.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File, "RssShmem": &m.Shmem}
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if p := fields[k]; ok && p != nil {
			*p = kib(v)
		}
	}
	return m, nil
}

// kib parses "  1234 kB" into bytes (0 when it is not that).
func kib(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}

// Resident is what one mapping (or several of one name) holds in memory,
// in bytes: Rss, of which Anon is anonymous (a private file mapping's
// pages the process wrote, such as the binary's data, count there).
type Resident struct{ RSS, Anon int64 }

// Mappings sums the resident memory of the live process pid by what is
// mapped, from /proc/PID/smaps (proc(5)): a file's path, or the kernel's
// name for an anonymous region ("[heap]", "[stack]", "[anon]" for one
// without a name).
func Mappings(pid int) (map[string]Resident, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]Resident{}
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		r := out[name]
		if v, ok := strings.CutPrefix(l, "Rss:"); ok {
			r.RSS += kib(v)
			out[name] = r
			continue
		}
		if v, ok := strings.CutPrefix(l, "Anonymous:"); ok {
			r.Anon += kib(v)
			out[name] = r
			continue
		}
		// A mapping's header: "start-end perms offset dev inode [path]".
		if f := strings.Fields(l); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			name = "[anon]"
			if len(f) >= 6 {
				name = strings.Join(f[5:], " ")
			}
		}
	}
	return out, sc.Err()
}

// MemorySampler reads a process's Memory every interval until Stop, and
// keeps the sample with the most RSS and the most of each kind. A peak
// between two samples is missed; Memory.HWM is the exact peak of the
// total.
type MemorySampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// mu guards all following fields.
	peak    Memory // the sample with the most RSS
	maxAnon int64
	maxFile int64
	samples int
}

// SampleMemory starts sampling pid's memory every interval.
func SampleMemory(pid int, interval time.Duration) *MemorySampler {
	s := &MemorySampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(interval)
	return s
}

func (s *MemorySampler) run(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

func (s *MemorySampler) sample() {
	m, err := ReadMemory(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if m.RSS > s.peak.RSS {
		s.peak = m
	}
	s.maxAnon, s.maxFile = max(s.maxAnon, m.Anon), max(s.maxFile, m.File)
}

// Stop takes a last sample, stops sampling and returns the sample with the
// most RSS (its HWM is the process's, at that sample), the most anonymous
// and the most file-backed memory any sample saw, and how many samples
// were taken.
func (s *MemorySampler) Stop() (peak Memory, maxAnon, maxFile int64, samples int) {
	close(s.stop)
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.maxAnon, s.maxFile, s.samples
}
