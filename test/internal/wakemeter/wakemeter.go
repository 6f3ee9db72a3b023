// Package wakemeter measures what a running torpor-agent spends on its
// empty wakes, from its text log and /proc: the measuring code of
// test/link's BenchmarkEmptyWake (the agent on the host or under
// qemu-user) and test/qemu's BenchmarkEmptyWakeVM (the agent inside the
// qemu-system guest, where test/qemu/guest/wakebench runs it on the
// guest's kernel). It has no test dependencies, so that it runs in the
// guest as well.
package wakemeter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Phases are the phases of a wake that the agent's "wake" line reports
// (phase.NAME=duration) and Wakes sums, the idle live phase aside.
var Phases = []string{"link", "pulse", "card", "publish", "drain", "announce", "close"}

// CPUTime is a process's CPU time, user and system.
type CPUTime struct {
	User time.Duration `json:"user"`
	Sys  time.Duration `json:"sys"`
}

// Wakes is what a Meter measured over its wakes.
type Wakes struct {
	N      int           `json:"n"`
	Cycle  CPUTime       `json:"cycle"`   // the whole cycle's CPU (/proc/PID/stat)
	InWake time.Duration `json:"in_wake"` // CPU between each wake's two log lines
	// Awake is the wall time awake without the live phase, and Phases
	// each phase's, summed over the wakes, on the agent's (scaled) clock.
	Awake  time.Duration            `json:"awake"`
	Phases map[string]time.Duration `json:"phases"`
	// LinkSent and LinkReceived sum the bytes the wakes' links sent and
	// received (the wake line's linkSent and linkReceived; 0 from an agent
	// that does not count them).
	LinkSent     int64 `json:"link_sent"`
	LinkReceived int64 `json:"link_received"`
	// Asleep is the CPU from each measured wake's "wake" line to the next
	// one's "waking" line, over Sleeps such sleeps: what the agent does as
	// it goes to sleep (such as returning its heap to the kernel) and
	// while it sleeps on a scaled clock.
	Asleep time.Duration `json:"asleep"`
	Sleeps int           `json:"sleeps"`
	// LogLines and LogBytes count the agent's log lines inside the wakes,
	// from each "waking" line to its "wake" line, both counted, and their
	// bytes with the newline.
	LogLines int   `json:"log_lines"`
	LogBytes int64 `json:"log_bytes"`
	// LineCPU is the agent's CPU time between consecutive log lines of a
	// wake, by the later line ("phase.NAME" for the phase lines, the
	// message for the others), summed over the wakes, when the agent
	// logs its CPU time on each line (torpor-agent's debug knob
	// TORPOR_DEBUG_CPU=1); empty otherwise.
	LineCPU map[string]time.Duration `json:"line_cpu,omitempty"`
	// Spans are the measured wakes' boundaries on the wall clock of the
	// meter's machine, read with the CPU readings, in order: a meter
	// outside the agent's machine (the host of a qemu-system guest)
	// reads its own figures over them. Add leaves them out.
	Spans []Span `json:"spans,omitempty"`
}

// Span is when the meter had read one wake's "waking" line and the
// agent's CPU at it (Start), and when the "wake" line came, before the
// meter read anything more (End).
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Meter follows an agent's log for n timer wakes, reading the process's
// CPU time as each wake's "waking" and "wake" lines arrive. Wakes for
// another reason (the boot wake) are left out.
type Meter struct {
	pid, n int
	w      Wakes
	cpu0   CPUTime
	began  time.Duration // thread CPU at the current wake's "waking"; 0 outside a timer wake
	ended  time.Duration // thread CPU at the last measured wake's "wake"; 0 before the first
	// lastCPU is the cpu= of the wake's last line that had one.
	lastCPU time.Duration
	now     func() time.Time // the wall clock of Spans
	taskCPU func(pid int) (time.Duration, error)
}

// New returns a Meter of process pid for n wakes.
func New(pid, n int) *Meter {
	return &Meter{pid: pid, n: n, now: time.Now, taskCPU: TaskCPU, w: Wakes{Phases: map[string]time.Duration{}, LineCPU: map[string]time.Duration{}}}
}

// Line takes the agent's next log line and reports whether the n'th
// measured wake has ended. A measured wake that did not link is an error.
func (m *Meter) Line(l string) (done bool, err error) {
	waking := strings.Contains(l, "msg=waking ") && strings.Contains(l, "reason=timer")
	woke := strings.Contains(l, "msg=wake ") && m.began != 0
	// A span runs from after the meter's reading at the "waking" line to
	// before anything it does at the "wake" line: the meter's own work (the
	// threads' schedstat, the line's attributes) is not the wake's.
	var end time.Time
	if woke {
		end = m.now()
	}
	if m.w.N < m.n && (waking || m.began != 0) {
		if err := m.line(l, waking); err != nil {
			return false, err
		}
	}
	if m.w.N >= m.n || !waking && !woke {
		return m.w.N >= m.n, nil
	}
	now, err := m.taskCPU(m.pid)
	if err != nil {
		return false, err
	}
	if waking {
		if m.ended != 0 {
			m.w.Asleep += now - m.ended
			m.w.Sleeps++
		}
		if m.w.N == 0 && m.began == 0 {
			if m.cpu0, err = ProcCPU(m.pid); err != nil {
				return false, err
			}
		}
		m.began = now
		if k := len(m.w.Spans); k > 0 && m.w.Spans[k-1].End.IsZero() {
			m.w.Spans = m.w.Spans[:k-1] // a "waking" line without its "wake"
		}
		m.w.Spans = append(m.w.Spans, Span{Start: m.now()})
		return false, nil
	}
	if err := m.wake(l, now-m.began); err != nil {
		return false, err
	}
	m.w.Spans[len(m.w.Spans)-1].End = end
	m.began, m.ended = 0, now
	if m.w.N < m.n {
		return false, nil
	}
	cpu1, err := ProcCPU(m.pid)
	m.w.Cycle = CPUTime{User: cpu1.User - m.cpu0.User, Sys: cpu1.Sys - m.cpu0.Sys}
	return true, err
}

// line counts l, a log line of a measured wake (its "waking" line when
// first): its bytes and, when the agent logs its CPU time (cpu=), the CPU
// since the wake's line before it.
func (m *Meter) line(l string, first bool) error {
	m.w.LogLines++
	m.w.LogBytes += int64(len(l)) + 1
	cpu, err := LogDuration(l, "cpu")
	if err != nil || cpu == 0 {
		return err
	}
	if !first && m.lastCPU > 0 {
		m.w.LineCPU[lineLabel(l)] += cpu - m.lastCPU
	}
	m.lastCPU = cpu
	return nil
}

var msgRE = regexp.MustCompile(`(?:^| )msg=("(?:[^"\\]|\\.)*"|\S+)`)

// lineLabel is what LineCPU files line l under: "phase.NAME" for a phase
// line, otherwise its message.
func lineLabel(l string) string {
	m := msgRE.FindStringSubmatch(l)
	if m == nil {
		return "?"
	}
	msg, err := strconv.Unquote(m[1])
	if err != nil {
		msg = m[1]
	}
	if msg == "phase" {
		if n := regexp.MustCompile(`(?:^| )name=(\S+)`).FindStringSubmatch(l); n != nil {
			return "phase." + n[1]
		}
	}
	return msg
}

// wake adds one "wake" line, whose wake took cpu.
func (m *Meter) wake(l string, cpu time.Duration) error {
	if strings.Contains(l, "linkError") || !strings.Contains(l, "drain=") {
		return fmt.Errorf("wakemeter: a wake did not link: %s", l)
	}
	d := map[string]time.Duration{}
	for _, name := range append([]string{"awake", "phase.live"}, Phases...) {
		key := name
		if name != "awake" && name != "phase.live" {
			key = "phase." + name
		}
		v, err := LogDuration(l, key)
		if err != nil {
			return err
		}
		d[name] = v
	}
	for _, c := range []struct {
		name string
		sum  *int64
	}{{"linkSent", &m.w.LinkSent}, {"linkReceived", &m.w.LinkReceived}} {
		n, err := LogInt(l, c.name)
		if err != nil {
			return err
		}
		*c.sum += n
	}
	m.w.InWake += cpu
	m.w.Awake += d["awake"] - d["phase.live"]
	for _, name := range Phases {
		m.w.Phases[name] += d[name]
	}
	m.w.N++
	return nil
}

// Wakes returns what was measured so far.
func (m *Meter) Wakes() Wakes { return m.w }

// TaskCPU sums the time on CPU of pid's threads (the first field of
// /proc/PID/task/TID/schedstat, in nanoseconds).
func TaskCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("wakemeter: no threads of %d: %v", pid, err)
	}
	var sum time.Duration
	for _, f := range tasks {
		d, err := ThreadCPU(f)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			continue // a thread that exited
		}
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// ThreadCPU reads the time on CPU of one thread from its schedstat file
// (/proc/PID/task/TID/schedstat): the first field, the nanoseconds it ran,
// which leaves out the time it waited to run.
func ThreadCPU(schedstat string) (time.Duration, error) {
	b, err := os.ReadFile(schedstat)
	if err != nil {
		return 0, fmt.Errorf("wakemeter: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, fmt.Errorf("wakemeter: %s is empty", schedstat)
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("wakemeter: %s: %q", schedstat, b)
	}
	return time.Duration(ns), nil
}

// ProcCPU reads utime and stime of pid, all its threads, from
// /proc/PID/stat (proc(5), fields 14 and 15, in clock ticks of 10 ms).
func ProcCPU(pid int) (CPUTime, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPUTime{}, fmt.Errorf("wakemeter: %w", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 > len(b) {
		return CPUTime{}, fmt.Errorf("wakemeter: /proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return CPUTime{}, fmt.Errorf("wakemeter: /proc/%d/stat: %q", pid, b)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return CPUTime{}, fmt.Errorf("wakemeter: /proc/%d/stat: %w", pid, err)
	}
	const tick = 10 * time.Millisecond
	return CPUTime{User: time.Duration(ut) * tick, Sys: time.Duration(st) * tick}, nil
}

// LogDuration reads the duration attribute name=… of a text log line; 0
// when the line has none.
func LogDuration(line, name string) (time.Duration, error) {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(name) + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		return 0, fmt.Errorf("wakemeter: %s=%s: %w", name, m[1], err)
	}
	return d, nil
}

// LogInt reads the integer attribute name=… of a text log line; 0 when
// the line has none.
func LogInt(line, name string) (int64, error) {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(name) + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("wakemeter: %s=%s: %w", name, m[1], err)
	}
	return n, nil
}

// Reporter is what Report needs of a *testing.B.
type Reporter interface {
	ReportMetric(n float64, unit string)
}

// Report reports w per wake as a benchmark's metrics: user-ms, sys-ms and
// cpu-ms (the whole cycle), wake-cpu-ms (inside the wakes), awake-ms and
// each phase's ms, the wall times in real time (divided by scale, the
// agent's time scale), the link's bytes sent and received when the
// agent counts them, the log's lines and bytes, LineCPU's figures as
// cpu-to-LABEL-ms (spaces in LABEL made underscores), and sleep-cpu-ms
// per sleep between two measured wakes.
func Report(b Reporter, w Wakes, scale float64) {
	n := float64(w.N)
	b.ReportMetric(ms(w.Cycle.User)/n, "user-ms/wake")
	b.ReportMetric(ms(w.Cycle.Sys)/n, "sys-ms/wake")
	b.ReportMetric(ms(w.Cycle.User+w.Cycle.Sys)/n, "cpu-ms/wake")
	b.ReportMetric(ms(w.InWake)/n, "wake-cpu-ms/wake")
	b.ReportMetric(ms(w.Awake)/n/scale, "awake-ms/wake")
	for name, d := range w.Phases {
		b.ReportMetric(ms(d)/n/scale, name+"-ms/wake")
	}
	if w.LinkSent+w.LinkReceived > 0 {
		b.ReportMetric(float64(w.LinkSent)/n, "link-sent-B/wake")
		b.ReportMetric(float64(w.LinkReceived)/n, "link-recv-B/wake")
	}
	if w.Sleeps > 0 {
		b.ReportMetric(ms(w.Asleep)/float64(w.Sleeps), "sleep-cpu-ms/sleep")
	}
	b.ReportMetric(float64(w.LogLines)/n, "log-lines/wake")
	b.ReportMetric(float64(w.LogBytes)/n, "log-B/wake")
	for label, d := range w.LineCPU {
		b.ReportMetric(ms(d)/n, "cpu-to-"+strings.ReplaceAll(label, " ", "_")+"-ms/wake")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Add returns w and v summed: the wakes of two runs of one build.
func (w Wakes) Add(v Wakes) Wakes {
	s := Wakes{N: w.N + v.N, Cycle: CPUTime{User: w.Cycle.User + v.Cycle.User, Sys: w.Cycle.Sys + v.Cycle.Sys},
		InWake: w.InWake + v.InWake, Awake: w.Awake + v.Awake, LinkSent: w.LinkSent + v.LinkSent,
		LinkReceived: w.LinkReceived + v.LinkReceived, Asleep: w.Asleep + v.Asleep, Sleeps: w.Sleeps + v.Sleeps,
		LogLines: w.LogLines + v.LogLines, LogBytes: w.LogBytes + v.LogBytes,
		Phases: map[string]time.Duration{}, LineCPU: map[string]time.Duration{}}
	for _, p := range []map[string]time.Duration{w.Phases, v.Phases} {
		for k, d := range p {
			s.Phases[k] += d
		}
	}
	for _, p := range []map[string]time.Duration{w.LineCPU, v.LineCPU} {
		for k, d := range p {
			s.LineCPU[k] += d
		}
	}
	return s
}
