package board_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/board"
	"github.com/torpor-dev/torpor/wake/rtc"
	"github.com/torpor-dev/torpor/wake/waketest"
	"periph.io/x/conn/v3/gpio"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func mustBoard(t *testing.T, name string) boards.Board {
	t.Helper()
	b, err := boards.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fakeConfig(k *waketest.Kernel, methods ...boards.Method) board.Config {
	return board.Config{Methods: methods, Sys: k.Sys(), Dev: k.Dev(), WriteFile: k.WriteFile, Ioctls: k,
		Clock: k.Clock, Kernel: k.Clocks}
}

// Each board's default, and the combinations that make sense, build a
// source that wakes for the right reason on the fake kernel.
func TestSourcesWake(t *testing.T) {
	tests := []struct {
		board   string
		methods []boards.Method
		press   time.Duration // gpio-keys press, 0 for none
		want    wake.Reason
		entered string
	}{
		{"qemu-virt", nil, 0, wake.ReasonRTC, "freeze"},
		{"generic-arm64", []boards.Method{boards.RTC}, 0, wake.ReasonRTC, "freeze"},
		{"qemu-virt", []boards.Method{boards.RTC, boards.GPIOKeys}, 10 * time.Minute, wake.ReasonGPIO, "freeze"},
		{"qemu-virt", []boards.Method{boards.GPIOKeys, boards.RTC}, 2 * time.Hour, wake.ReasonRTC, "freeze"},
		{"rpi-4", []boards.Method{boards.GPIOKeys}, 10 * time.Minute, wake.ReasonGPIO, "freeze"},
		{"rpi-zero-w", nil, 0, wake.ReasonTimer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.board+" "+strings.Trim(strings.Join(strs(tt.methods), "+"), "+"), func(t *testing.T) {
			b := mustBoard(t, tt.board)
			k := waketest.NewKernel(t, t0)
			if tt.press != 0 {
				k.PressAt(t0.Add(tt.press))
			}
			// The fake kernel's button is labelled as on QEMU; the Pi
			// profiles expect their own label.
			b.WakeKey = waketest.KeyLabel
			s, err := board.New(b, fakeConfig(k, tt.methods...))
			if err != nil {
				t.Fatal(err)
			}
			created := k.Clock.TimerCreated()
			ch := waketest.StartWait(context.Background(), s, t0.Add(time.Hour))
			if tt.want == wake.ReasonTimer {
				<-created
				k.Advance(time.Hour)
			}
			r := <-ch
			if r.Err != nil {
				t.Error(r.Err)
			}
			w := r.Wake
			if w.Reason != tt.want {
				t.Errorf("woke for %v (%s), want %v", w.Reason, w.Detail, tt.want)
			}
			if got := strings.Join(k.Entered(), ","); got != tt.entered {
				t.Errorf("entered %q, want %q", got, tt.entered)
			}
		})
	}
}

// A Pi 4 with an RTC HAT: the configuration names the device.
func TestRTCHat(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	c := fakeConfig(k, boards.RTC)
	c.RTC.Device = "rtc0"
	s, err := board.New(mustBoard(t, "rpi-4"), c)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := s.Wait(context.Background(), t0.Add(time.Hour)); err != nil || w.Reason != wake.ReasonRTC {
		t.Errorf("Wait = %+v, %v; want an RTC wake", w, err)
	}
}

func TestRPi5PowersOff(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	c := fakeConfig(k)
	var armed bool
	c.PowerOff = func() error { _, armed = k.Alarm(); return errors.New("not in a test") }
	s, err := board.New(mustBoard(t, "rpi-5"), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(context.Background(), t0.Add(time.Hour)); err == nil || !armed {
		t.Errorf("rpi-5 default: Wait = %v, alarm armed at power-off %v; want a power-off with the alarm armed", err, armed)
	}
}

func TestGPIOAndTimer(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	p := waketest.NewPin("GPIO17", 17)
	c := fakeConfig(k, boards.Timer, boards.GPIO)
	c.GPIO.Pin = p
	s, err := board.New(mustBoard(t, "rpi-zero-w"), c)
	if err != nil {
		t.Fatal(err)
	}
	ch := waketest.StartWait(context.Background(), s, t0.Add(time.Hour))
	if err := p.Edge(context.Background(), gpio.Low); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.Err != nil || r.Wake.Reason != wake.ReasonGPIO {
		t.Errorf("woke for %v, %v; want gpio", r.Wake.Reason, r.Err)
	}
	if p.Pull() != gpio.PullUp {
		t.Errorf("pull %v, want the default PullUp", p.Pull())
	}
	if k.Clock.Pending() != 0 {
		t.Errorf("timer left pending after the GPIO won")
	}
}

func TestRefusedCombinations(t *testing.T) {
	tests := []struct {
		board   string
		methods []boards.Method
		want    string
	}{
		{"qemu-virt", []boards.Method{boards.RTC, boards.GPIO}, "could never fire"},
		{"qemu-virt", []boards.Method{boards.RTC, boards.Timer}, "could never fire"},
		{"rpi-4", []boards.Method{boards.GPIOKeys, boards.PowerOffGPIO}, "cannot be combined"},
		{"rpi-4", []boards.Method{boards.RTCPowerOff}, "does not support"},
		{"rpi-4", []boards.Method{boards.RTC}, "no RTC of its own"},
		{"qemu-virt", []boards.Method{boards.Timer, boards.Timer}, "twice"},
		{"generic-arm64", []boards.Method{boards.GPIO}, "wake GPIO line not found"},
	}
	for _, tt := range tests {
		k := waketest.NewKernel(t, t0)
		c := fakeConfig(k, tt.methods...)
		c.GPIO.OpenPin = func(b boards.Board) (gpio.PinIn, error) { return nil, board.ErrNoLine }
		_, err := board.New(mustBoard(t, tt.board), c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: New = %v, want an error containing %q", tt.board, tt.methods, err, tt.want)
		}
	}
}

func strs(ms []boards.Method) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// TestTimeScale: a time-scaled clock is refused with the methods that keep
// time on the kernel's real clock, and accepted with the others.
func TestTimeScale(t *testing.T) {
	tests := []struct {
		board   string
		methods []boards.Method
		ok      bool
	}{
		{"qemu-virt", []boards.Method{boards.RTC}, false},
		{"qemu-virt", []boards.Method{boards.RTC, boards.GPIOKeys}, false},
		{"rpi-5", []boards.Method{boards.RTCPowerOff}, false},
		{"rpi-4", []boards.Method{boards.PowerOffGPIO}, false},
		{"rpi-4", []boards.Method{boards.GPIOKeys}, true},
		{"qemu-virt", []boards.Method{boards.Timer}, true},
	}
	for _, tt := range tests {
		k := waketest.NewKernel(t, t0)
		c := fakeConfig(k, tt.methods...)
		sc, err := clock.NewScaled(k.Clock, 240)
		if err != nil {
			t.Fatal(err)
		}
		c.Clock = sc
		_, err = board.New(mustBoard(t, tt.board), c)
		if tt.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "4m0s of the agent's time at a scale of 240") {
			t.Errorf("%s %v at scale 240: New = %v, want ok %v", tt.board, tt.methods, err, tt.ok)
		}
	}
	// The alarm refuses a scaled clock itself.
	k := waketest.NewKernel(t, t0)
	sc, _ := clock.NewScaled(k.Clock, 60)
	a := &rtc.Alarm{Sys: k.Sys(), Dev: k.Dev(), Clock: sc, WriteFile: k.WriteFile}
	if _, err := a.Arm(t0.Add(time.Hour)); err == nil {
		t.Error("Alarm.Arm on a scaled clock succeeded")
	}
}
