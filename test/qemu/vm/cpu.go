package vm

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
)

// CPUSample is the host's CPU time of the machine's QEMU threads at one
// moment of the host's wall clock: the first field of
// /proc/PID/task/TID/schedstat, the nanoseconds the thread ran on a host
// CPU, which leaves out the time it was runnable but descheduled.
type CPUSample struct {
	At time.Time
	// VCPU sums the vCPU threads (TCG: one a vCPU, named by QMP's
	// query-cpus-fast): the guest's own work, its kernel's and its
	// processes', emulated; a vCPU halted by an idle guest (WFI) sleeps.
	VCPU time.Duration
	// Main is the main loop's thread (the process's first): QEMU's I/O,
	// such as user networking (slirp) and the virtio devices' host side.
	Main time.Duration
}

// CPUSamples are samples in the order they were taken.
type CPUSamples []CPUSample

// At returns the threads' CPU time at t, interpolated linearly between the
// samples on either side of t (the first or last sample outside them).
func (s CPUSamples) At(t time.Time) CPUSample {
	if len(s) == 0 {
		return CPUSample{At: t}
	}
	i := 0
	for i < len(s) && !s[i].At.After(t) {
		i++
	}
	if i == 0 || i == len(s) {
		c := s[max(i-1, 0)]
		c.At = t
		return c
	}
	a, b := s[i-1], s[i]
	f := float64(t.Sub(a.At)) / float64(b.At.Sub(a.At))
	lerp := func(x, y time.Duration) time.Duration { return x + time.Duration(f*float64(y-x)) }
	return CPUSample{At: t, VCPU: lerp(a.VCPU, b.VCPU), Main: lerp(a.Main, b.Main)}
}

// Between returns the threads' CPU time from t0 to t1.
func (s CPUSamples) Between(t0, t1 time.Time) (vcpu, main time.Duration) {
	a, b := s.At(t0), s.At(t1)
	return b.VCPU - a.VCPU, b.Main - a.Main
}

// CPUSampler reads the CPU time of the machine's QEMU threads every
// interval until it is stopped or the machine exits.
type CPUSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// mu guards all following fields.
	samples CPUSamples
	err     error
}

// SampleCPU asks QEMU over QMP for its vCPU threads (query-cpus-fast) and
// samples their CPU time and the main loop's every interval. The QMP
// socket must be open: call it once the guest has printed a line.
func (v *VM) SampleCPU(every time.Duration) (*CPUSampler, error) {
	q, err := v.QMP()
	if err != nil {
		return nil, err
	}
	r, err := q.Execute("query-cpus-fast", nil)
	q.Close()
	if err != nil {
		return nil, err
	}
	var cpus []struct {
		Thread int `json:"thread-id"`
	}
	if err := json.Unmarshal(r, &cpus); err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("vm: query-cpus-fast: %s: %v", r, err)
	}
	pid := v.cmd.Process.Pid
	files := []string{fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid)}
	for _, c := range cpus {
		files = append(files, fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, c.Thread))
	}
	s := &CPUSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(v.done, files, every)
	return s, nil
}

func (s *CPUSampler) run(exited <-chan struct{}, files []string, every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c, err := readThreads(files)
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.samples = append(s.samples, c)
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
		select {
		case <-tick.C:
		case <-s.stop:
			return
		case <-exited:
			return
		}
	}
}

// readThreads reads files, the main thread's schedstat then the vCPUs'.
func readThreads(files []string) (CPUSample, error) {
	c := CPUSample{At: time.Now()}
	for i, f := range files {
		d, err := wakemeter.ThreadCPU(f)
		if err != nil {
			return c, fmt.Errorf("vm: %w", err)
		}
		if i == 0 {
			c.Main = d
		} else {
			c.VCPU += d
		}
	}
	return c, nil
}

// Stop stops the sampling and returns the samples; the error is the
// reading that ended it early, if one did (the machine's exit does not).
func (s *CPUSampler) Stop() (CPUSamples, error) {
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.err
}
