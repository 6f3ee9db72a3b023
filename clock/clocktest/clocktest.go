// Package clocktest provides a fake clock.Clock for tests.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Clock is a fake clock whose time moves only when Advance or Set is called.
// It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	// mu guards all following fields.
	now    time.Time
	timers []*timer
	wait   []chan struct{} // closed when a timer is created
}

// New returns a fake clock set to now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, when: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.fired = true
		t.ch <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	for _, w := range c.wait {
		close(w)
	}
	c.wait = nil
	return t
}

// Advance moves the fake time forward by d, firing every timer that falls
// due, in order of their deadlines.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.Set(target)
}

// Set moves the fake time to t (which may be in the past, as a wall clock
// set back by NTP would be) and fires the timers that fall due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].when.Before(c.timers[j].when) })
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.when.After(t) {
			if t.After(c.now) && tm.when.After(c.now) {
				c.now = tm.when
			}
			tm.fired = true
			tm.ch <- tm.when
			continue
		}
		kept = append(kept, tm)
	}
	c.timers = kept
	c.now = t
}

// Pending returns the number of timers waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// TimerCreated returns a channel that is closed the next time a timer is
// created, so a test can wait for code under test to start waiting before
// it advances the clock.
func (c *Clock) TimerCreated() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.wait = append(c.wait, ch)
	return ch
}

type timer struct {
	c     *Clock
	when  time.Time
	ch    chan time.Time
	fired bool // guarded by c.mu
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.fired {
		return false
	}
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			t.fired = true
			return true
		}
	}
	return false
}

// Recorder is a Clock that sends the duration of every timer made on it
// to Made once the timer is set, for tests of what a component waits: a
// test that reads a duration from Made and advances the clock by it fires
// that timer.
type Recorder struct {
	*Clock
	Made chan time.Duration
}

// NewRecorder returns a Recorder at now whose Made holds up to n
// durations before NewTimer blocks.
func NewRecorder(now time.Time, n int) *Recorder {
	return &Recorder{Clock: New(now), Made: make(chan time.Duration, n)}
}

// NewTimer makes the timer, then sends d to Made.
func (r *Recorder) NewTimer(d time.Duration) clock.Timer {
	t := r.Clock.NewTimer(d)
	r.Made <- d
	return t
}
