package console

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// Missed counts the wakes or pulses that prev's schedule (the one overdue
// is judged by: schedule) promised before at and that did not come: the
// expected one, and in hourly_wake every hourly window after it, in
// always_on and session every pulse PulseInterval after it; each counts
// once at is past its start and the window's length. The relay
// (transport/relay) records it with each wake of a device's history.
func Missed(prev agents.State, at time.Time) int {
	_, exp := schedule(prev, nil, at)
	if exp == nil {
		return 0
	}
	late := at.Sub(exp.Add(windowLength(prev.Window)))
	if late <= 0 {
		return 0
	}
	var period time.Duration
	switch prev.Mode {
	case wake.HourlyWake:
		period = time.Hour
	case wake.AlwaysOn, wake.Session:
		period = PulseInterval
	default:
		return 1 // sleep: the one wake announced
	}
	return 1 + int((late-1)/period)
}

// history reads id's history of wakes for the device page.
func (s *Source) history(ctx context.Context, id string) ([]operatorapi.HistoryWake, error) {
	h, err := s.States.Wakes(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.HistoryWake, 0, len(h))
	for _, w := range h {
		out = append(out, operatorapi.HistoryWake{At: w.At.UTC(), Reason: w.Reason, AwakeMs: w.AwakeMs, Drained: w.Drained,
			QueueDepth: w.QueueDepth, Missed: w.Missed, Relay: w.Relay})
	}
	return out, nil
}

// Sparkline geometry, in the SVG's user units (console.css sizes it).
const (
	sparkW, sparkH, sparkPad = 240, 40, 2
)

// sparkline is one series of a device's history drawn as an inline SVG
// path, with what it shows as text for who cannot see it.
type sparkline struct {
	ID, Title, Class string
	Path             string // the path's d: one point per wake, oldest left
	N                int
	Min, Max, Last   string
	W, H             int
}

// sparklines draws the device page's three series: queue depth and
// missed windows at each wake, and awake time of the wakes whose awake
// time is known. None when the history is empty.
func sparklines(h []operatorapi.HistoryWake) []sparkline {
	if len(h) == 0 {
		return nil
	}
	var depth, missed, awake []float64
	for _, w := range h {
		depth = append(depth, float64(w.QueueDepth))
		missed = append(missed, float64(w.Missed))
		if w.AwakeMs > 0 {
			awake = append(awake, float64(w.AwakeMs))
		}
	}
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	secs := func(v float64) string { return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s" }
	return []sparkline{
		newSparkline("depth", "Queue depth at each wake (records)", depth, count),
		newSparkline("awake", "Awake time of each wake", awake, secs),
		newSparkline("missed", "Windows missed before each wake", missed, count),
	}
}

// newSparkline scales vs into the sparkline's box: left to right in
// order, from 0 at the bottom to the largest value at the top.
func newSparkline(class, title string, vs []float64, format func(float64) string) sparkline {
	sl := sparkline{ID: "spark-" + class, Title: title, Class: class, N: len(vs), W: sparkW, H: sparkH}
	if len(vs) == 0 {
		return sl
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	sl.Min, sl.Max, sl.Last = format(lo), format(hi), format(vs[len(vs)-1])
	var b strings.Builder
	for i, v := range vs {
		x := float64(sparkW) / 2
		if len(vs) > 1 {
			x = sparkPad + float64(i)*float64(sparkW-2*sparkPad)/float64(len(vs)-1)
		}
		y := float64(sparkH - sparkPad)
		if hi > 0 {
			y -= v / hi * float64(sparkH-2*sparkPad)
		}
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&b, "%s%s %s ", cmd, coord(x), coord(y))
	}
	if len(vs) == 1 {
		b.WriteString("h0.01") // a lone point: a dot with the round line cap
	}
	sl.Path = strings.TrimSpace(b.String())
	return sl
}

// coord is a coordinate with at most two decimals.
func coord(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
