package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Event kinds: the second column of every narrated line. test/demo looks
// for them, so they are part of the demo's output contract.
const (
	KindStart   = "start"   // a process started or is ready
	KindSession = "session" // an MLS pair session was established
	KindSend    = "send"    // the sender sent an object (with the answer)
	KindAsleep  = "503"     // the relay answered 503 agent_asleep
	KindLive    = "live"    // the relay forwarded a request to an awake agent
	KindQueue   = "queue"   // queue depths at the relay
	KindWake    = "wake"    // an agent woke (and why)
	KindDrain   = "drain"   // what a wake's drain did
	KindAccept  = "accept"  // an object reached the application
	KindReject  = "reject"  // an object or record was rejected, with the cause
	KindHold    = "hold"    // a consequential action was held for the owner
	KindGrant   = "grant"   // a principal granted a passport, or the owner trusted a principal
	KindRun     = "run"     // an action ran unsupervised under a presented Autonomy Envelope
	KindMQTT    = "mqtt"    // an operator command over MQTT and its reply
	KindConfirm = "confirm" // a held action ran after the owner's confirmation
	KindSleep   = "sleep"   // an agent went to sleep, and until when
	KindStop    = "stop"    // a process stopped
	KindWarn    = "warn"    // a daemon logged a warning
	KindError   = "error"   // something went wrong
)

// Narrator prints the demo's lines: real seconds since the start, the
// scaled clock's time of day, who, the kind of event and what happened.
// It is safe for concurrent use.
type Narrator struct {
	w     io.Writer
	start time.Time

	mu sync.Mutex
	// mu guards the following fields.
	clock clock.Clock // the scaled clock, for the time of day shown
}

// SetClock replaces the clock whose time of day the lines show.
func (n *Narrator) SetClock(c clock.Clock) {
	n.mu.Lock()
	n.clock = clock.Or(c)
	n.mu.Unlock()
}

// NewNarrator returns a narrator writing to w, with elapsed times counted
// from now.
func NewNarrator(w io.Writer, c clock.Clock) *Narrator {
	return &Narrator{w: w, start: time.Now(), clock: clock.Or(c)}
}

// Event prints one line.
func (n *Narrator) Event(who, kind, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, "%6.1fs  %s  %-8s %-7s %s\n", time.Since(n.start).Seconds(),
		n.clock.Now().UTC().Format("15:04:05"), who, kind, msg)
}

// Printf prints free text (headings, the summary table).
func (n *Narrator) Printf(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, format, args...)
}

// Elapsed returns the real time since the narrator started.
func (n *Narrator) Elapsed() time.Duration { return time.Since(n.start) }

// Table formats rows as a plain-text table with a header rule; every column
// is as wide as its widest cell.
func Table(header []string, rows [][]string) string {
	width := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			if i < len(width) && len([]rune(c)) > width[i] {
				width[i] = len([]rune(c))
			}
		}
	}
	var b strings.Builder
	line := func(r []string) {
		for i := range width {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			if i == len(width)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + strings.Repeat(" ", width[i]-len([]rune(c))+2))
			}
		}
		b.WriteString("\n")
	}
	line(header)
	rule := make([]string, len(header))
	for i, w := range width {
		rule[i] = strings.Repeat("-", w)
	}
	line(rule)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// counts renders a cause → count map as "a×2, b" in key order; "–" when
// empty.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k
		if m[k] > 1 {
			parts[i] = fmt.Sprintf("%s×%d", k, m[k])
		}
	}
	return strings.Join(parts, ", ")
}

// scaledDur writes a duration of scaled time with the real time it took at
// factor f: "15m0s (3.8 s real)".
func scaledDur(d time.Duration, f float64) string {
	return fmt.Sprintf("%v (%.1f s real)", d.Round(time.Second), d.Seconds()/f)
}
