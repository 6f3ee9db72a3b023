package gpio_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/wake"
	wgpio "github.com/torpor-dev/torpor/wake/gpio"
	"github.com/torpor-dev/torpor/wake/waketest"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func TestWaitForEdge(t *testing.T) {
	tests := []struct {
		name  string
		pull  gpio.Pull
		edge  gpio.Edge
		level gpio.Level
	}{
		{"button to ground", gpio.PullUp, gpio.FallingEdge, gpio.Low},
		{"PIR sensor", gpio.PullDown, gpio.RisingEdge, gpio.High},
		{"any edge", gpio.PullNoChange, gpio.NoEdge, gpio.High},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := waketest.NewPin("WAKE_BTN", 3)
			c := clocktest.New(t0)
			s := &wgpio.Source{Pin: p, Pull: tt.pull, Edge: tt.edge, Clock: c, Kernel: waketest.NewKernelClock(0)}
			ch := waketest.StartWait(context.Background(), s, time.Time{})
			if err := p.Edge(context.Background(), tt.level); err != nil {
				t.Fatal(err)
			}
			r := <-ch
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Wake.Reason != wake.ReasonGPIO || r.Wake.Source != "gpio:WAKE_BTN" || !r.Wake.At.Equal(t0) {
				t.Errorf("Wait = %+v, want a gpio wake from gpio:WAKE_BTN at %v", r.Wake, t0)
			}
			if p.Pull() != tt.pull || p.Read() != tt.level {
				t.Errorf("pin pull %v level %v, want %v %v", p.Pull(), p.Read(), tt.pull, tt.level)
			}
		})
	}
}

// Poll timeouts without an edge do not end the wait.
func TestWaitSurvivesPollTimeouts(t *testing.T) {
	p := waketest.NewPin("GPIO17", 17)
	s := &wgpio.Source{Pin: p, Edge: gpio.FallingEdge, Poll: time.Second, Kernel: waketest.NewKernelClock(0)}
	ch := waketest.StartWait(context.Background(), s, time.Time{})
	for range 3 {
		if err := p.WaitingForEdge(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.Poll(time.Second)
	}
	select {
	case r := <-ch:
		t.Fatalf("Wait returned on a poll timeout: %+v", r)
	default:
	}
	if err := p.Edge(context.Background(), gpio.Low); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.Err != nil || r.Wake.Reason != wake.ReasonGPIO {
		t.Fatalf("Wait = %+v, %v", r.Wake, r.Err)
	}
}

func TestHaltAndCancel(t *testing.T) {
	tests := []struct {
		name string
		stop func(*wgpio.Source, context.CancelFunc)
		want error
	}{
		{"halt", func(s *wgpio.Source, _ context.CancelFunc) { s.Halt() }, wake.ErrHalted},
		{"cancel", func(_ *wgpio.Source, cancel context.CancelFunc) { cancel() }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := waketest.NewPin("GPIO17", 17)
			s := &wgpio.Source{Pin: p, Edge: gpio.BothEdges, Kernel: waketest.NewKernelClock(0)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := waketest.StartWait(ctx, s, time.Time{})
			if err := p.WaitingForEdge(ctx); err != nil {
				t.Fatal(err)
			}
			tt.stop(s, cancel)
			if r := <-ch; !errors.Is(r.Err, tt.want) {
				t.Fatalf("Wait = %+v, %v; want %v", r.Wake, r.Err, tt.want)
			}
			// The source can wait again after a halt.
			ch = waketest.StartWait(context.Background(), s, time.Time{})
			if err := p.Edge(context.Background(), gpio.High); err != nil {
				t.Fatal(err)
			}
			if r := <-ch; r.Err != nil || r.Wake.Reason != wake.ReasonGPIO {
				t.Fatalf("Wait after %s = %+v, %v", tt.name, r.Wake, r.Err)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := (&wgpio.Source{}).Wait(context.Background(), time.Time{}); err == nil {
		t.Error("Wait with no pin succeeded")
	}
	p := &gpiotest.Pin{N: "X"} // no EdgesChan: In refuses edge detection
	if _, err := (&wgpio.Source{Pin: p, Edge: gpio.RisingEdge}).Wait(context.Background(), time.Time{}); err == nil {
		t.Error("Wait on a pin that refuses edges succeeded")
	}
}

func TestName(t *testing.T) {
	tests := []struct {
		pin  *waketest.Pin
		want string
	}{
		{waketest.NewPin("WAKE_BTN", 3), "gpio:WAKE_BTN"},
		{waketest.NewPin("", 3), "gpio:3"}, // lines the device tree does not name
	}
	for _, tt := range tests {
		if got := (&wgpio.Source{Pin: tt.pin}).Name(); got != tt.want {
			t.Errorf("Name() = %q, want %q", got, tt.want)
		}
	}
}
