package procs

import (
	"os"
	"testing"
	"time"
)

// TestReadMemory reads the test process's own memory: the parts add up
// to the total, the peak is at least the total, and the process's own
// binary has resident pages in its mappings.
func TestReadMemory(t *testing.T) {
	pid := os.Getpid()
	m, err := ReadMemory(pid)
	if err != nil {
		t.Fatalf("reading /proc (the tests run on Linux): %v", err)
	}
	if m.RSS == 0 || m.Anon == 0 || m.File == 0 {
		t.Fatalf("ReadMemory(self) = %+v, want RSS, Anon and File set", m)
	}
	// RSS is read at one instant and its parts at another: allow the
	// heap to move in between.
	if d := m.RSS - (m.Anon + m.File + m.Shmem); d < -(1<<20) || d > 1<<20 {
		t.Errorf("ReadMemory(self) = %+v: parts sum to %d, RSS %d", m, m.Anon+m.File+m.Shmem, m.RSS)
	}
	if m.HWM < m.RSS-(1<<20) {
		t.Errorf("ReadMemory(self) = %+v: HWM below RSS", m)
	}
	maps, err := Mappings(pid)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if maps[exe].RSS == 0 {
		t.Errorf("Mappings(self)[%q] = %+v, want resident pages of the test binary (have %d mappings)", exe, maps[exe], len(maps))
	}
	var sum int64
	for _, r := range maps {
		sum += r.RSS
	}
	if d := sum - m.RSS; d < -(4<<20) || d > 4<<20 {
		t.Errorf("Mappings(self) sum to %d bytes, VmRSS %d", sum, m.RSS)
	}
}

// TestMemorySampler samples the test process and keeps the largest
// sample.
func TestMemorySampler(t *testing.T) {
	if _, err := ReadMemory(os.Getpid()); err != nil {
		t.Fatalf("reading /proc (the tests run on Linux): %v", err)
	}
	s := SampleMemory(os.Getpid(), time.Millisecond)
	peak, maxAnon, maxFile, n := s.Stop()
	if n < 2 || peak.RSS == 0 || maxAnon < peak.Anon || maxFile < peak.File {
		t.Errorf("Stop() = %+v, %d, %d, %d samples: want at least the first and the last sample, maxima at least the peak's", peak, maxAnon, maxFile, n)
	}
}

func TestKiB(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"   1234 kB", 1234 << 10},
		{"0 kB", 0},
		{"12", 12 << 10},
		{"x kB", 0},
	}
	for _, tt := range tests {
		if got := kib(tt.in); got != tt.want {
			t.Errorf("kib(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
