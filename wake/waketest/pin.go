package waketest

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

// Pin is periph's gpiotest.Pin made to behave like a gpioioctl line: its
// WaitForEdge timeouts run on a fake clock that only Halt moves, and Halt
// ends a pending WaitForEdge (returning false), as gpioioctl's does. So a
// test never waits for a poll timeout and a halted wait ends at once.
type Pin struct {
	*gpiotest.Pin
	clock *clockwork.FakeClock
}

// NewPin returns a pin with the given name and number.
func NewPin(name string, num int) *Pin {
	c := clockwork.NewFakeClock()
	return &Pin{Pin: &gpiotest.Pin{N: name, Num: num, EdgesChan: make(chan gpio.Level, 1), Clock: c}, clock: c}
}

// Halt ends a pending WaitForEdge.
func (p *Pin) Halt() error {
	p.clock.Advance(24 * time.Hour)
	return nil
}

// Edge waits until code under test is blocked in WaitForEdge, then delivers
// an edge that leaves the line at level l. It returns ctx.Err() if ctx ends
// first.
func (p *Pin) Edge(ctx context.Context, l gpio.Level) error {
	if err := p.WaitingForEdge(ctx); err != nil {
		return err
	}
	p.EdgesChan <- l
	return nil
}

// WaitingForEdge returns once some code is blocked in WaitForEdge.
func (p *Pin) WaitingForEdge(ctx context.Context) error {
	return p.clock.BlockUntilContext(ctx, 1)
}

// Poll lets every pending WaitForEdge time out, as if its poll interval had
// passed without an edge.
func (p *Pin) Poll(d time.Duration) { p.clock.Advance(d) }
