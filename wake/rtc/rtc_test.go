package rtc_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/rtc"
	"github.com/torpor-dev/torpor/wake/suspend"
	"github.com/torpor-dev/torpor/wake/waketest"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newSource(t testing.TB, k *waketest.Kernel, m rtc.Method) *rtc.Source {
	t.Helper()
	a := &rtc.Alarm{Sys: k.Sys(), Dev: k.Dev(), Method: m, Clock: k.Clock, WriteFile: k.WriteFile, Ioctls: k}
	return &rtc.Source{
		Alarm:  a,
		System: &suspend.System{Sys: k.Sys(), WriteFile: k.WriteFile, Meter: k.Meter()},
		Keys:   []string{waketest.KeyLabel},
	}
}

func TestArmConvertsToRTCTimeBase(t *testing.T) {
	tests := []struct {
		name   string
		method rtc.Method
		offset time.Duration // RTC minus wall clock
		in     time.Duration // wake in
		want   time.Duration // alarm, relative to the RTC's now
	}{
		{"sysfs in step", rtc.Sysfs, 0, time.Hour, time.Hour},
		{"sysfs RTC behind", rtc.Sysfs, -90 * time.Second, time.Hour, time.Hour},
		{"sysfs RTC ahead", rtc.Sysfs, 5 * time.Minute, 10 * time.Second, 10 * time.Second},
		{"sysfs rounds up", rtc.Sysfs, 0, 1500 * time.Millisecond, 2 * time.Second},
		{"sysfs too soon", rtc.Sysfs, 0, 100 * time.Millisecond, time.Second},
		{"sysfs past", rtc.Sysfs, 0, -time.Minute, time.Second},
		{"ioctl in step", rtc.Ioctl, 0, time.Hour, time.Hour},
		{"ioctl RTC behind", rtc.Ioctl, -90 * time.Second, 45 * time.Minute, 45 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := waketest.NewKernel(t, t0)
			k.SetRTCOffset(tt.offset)
			s := newSource(t, k, tt.method)
			got, err := s.Alarm.Arm(t0.Add(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			want := k.RTCNow().Add(tt.want)
			armed, ok := k.Alarm()
			if !ok || !armed.Equal(want) || !got.Equal(want) {
				t.Errorf("Arm(+%v) = %v, kernel alarm %v (armed %v); want %v", tt.in, got, armed, ok, want)
			}
			at, ok, err := s.Alarm.Armed()
			if err != nil || !ok || !at.Equal(want) {
				t.Errorf("Armed() = %v, %v, %v; want %v", at, ok, err, want)
			}
		})
	}
}

// Re-arming an armed alarm works: the kernel answers EBUSY to a second
// time written without "0" first, and the fake enforces it.
func TestRearmWritesZeroFirst(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSource(t, k, rtc.Sysfs)
	for _, d := range []time.Duration{time.Hour, 2 * time.Hour} {
		if _, err := s.Alarm.Arm(t0.Add(d)); err != nil {
			t.Fatalf("Arm(+%v): %v", d, err)
		}
	}
	want := []string{"wakealarm=0", "wakealarm=" + itoa(t0.Add(time.Hour)), "wakealarm=0", "wakealarm=" + itoa(t0.Add(2*time.Hour))}
	if diff := cmp.Diff(want, k.Writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// The fake really refuses a blind re-arm, as the kernel does.
	if err := k.WriteFile(k.Sys()+"/class/rtc/rtc0/wakealarm", []byte(itoa(t0.Add(3*time.Hour)))); !errors.Is(err, errEBUSY) {
		t.Errorf("blind re-arm = %v, want EBUSY", err)
	}
	if err := s.Alarm.Disarm(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Alarm.Armed(); ok {
		t.Error("alarm still armed after Disarm")
	}
}

func TestWaitReason(t *testing.T) {
	tests := []struct {
		name      string
		method    rtc.Method
		press     time.Duration // 0: no press
		noIRQ     bool
		want      wake.Reason
		wantSlept time.Duration
		detail    string
	}{
		{"rtc sysfs", rtc.Sysfs, 0, false, wake.ReasonRTC, time.Hour, "pm_wakeup_irq=16 (rtc-pl031)"},
		{"rtc ioctl", rtc.Ioctl, 0, false, wake.ReasonRTC, time.Hour, "pm_wakeup_irq=16"},
		{"gpio-keys first", rtc.Sysfs, 20 * time.Minute, false, wake.ReasonGPIO, 20 * time.Minute, "GPIO Key Poweroff"},
		{"rtc before the press", rtc.Sysfs, 2 * time.Hour, false, wake.ReasonRTC, time.Hour, "rtc-pl031"},
		{"no irq, alarm time reached", rtc.Sysfs, 0, true, wake.ReasonRTC, time.Hour, "inferred"},
		{"no irq, woken early", rtc.Sysfs, 10 * time.Minute, true, wake.ReasonUnknown, 10 * time.Minute, "before the alarm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := waketest.NewKernel(t, t0)
			k.NoWakeupIRQ = tt.noIRQ
			if tt.press != 0 {
				k.PressAt(t0.Add(tt.press))
			}
			s := newSource(t, k, tt.method)
			w, err := s.Wait(context.Background(), t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if w.Reason != tt.want || !strings.Contains(w.Detail, tt.detail) {
				t.Errorf("Wait = %v (%s), want %v (containing %q)", w.Reason, w.Detail, tt.want, tt.detail)
			}
			if w.Slept.Boot != tt.wantSlept || w.Slept.Suspended() != tt.wantSlept || w.Slept.Wall != tt.wantSlept {
				t.Errorf("Slept = %+v, want %v suspended", w.Slept, tt.wantSlept)
			}
			if !w.At.Equal(t0.Add(tt.wantSlept)) {
				t.Errorf("At = %v, want %v", w.At, t0.Add(tt.wantSlept))
			}
			checkEnteredDisarmed(t, k, "freeze")
		})
	}
}

// checkEnteredDisarmed checks that the kernel entered exactly the sleep
// states want and that no alarm is left armed.
func checkEnteredDisarmed(t *testing.T, k *waketest.Kernel, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, k.Entered()); diff != "" {
		t.Errorf("states entered (-want +got):\n%s", diff)
	}
	if _, ok := k.Alarm(); ok {
		t.Error("alarm left armed")
	}
}

func TestWaitStates(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSource(t, k, rtc.Sysfs)
	s.State = suspend.Mem
	if _, err := s.Wait(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	s.State = "standby"
	if _, err := s.Wait(context.Background(), t0.Add(2*time.Minute)); err == nil {
		t.Error("Wait with state standby succeeded")
	}
	checkEnteredDisarmed(t, k, "mem")
}

func TestWaitPowerOff(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSource(t, k, rtc.Sysfs)
	s.State = suspend.PowerOff
	var armedAtOff time.Time
	s.System.PowerOff = func() error {
		armedAtOff, _ = k.Alarm()
		return errors.New("reboot: operation not permitted")
	}
	_, err := s.Wait(context.Background(), t0.Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Fatalf("Wait(poweroff) = %v, want the power-off error", err)
	}
	if !armedAtOff.Equal(t0.Add(time.Hour)) {
		t.Errorf("alarm at power-off = %v, want %v", armedAtOff, t0.Add(time.Hour))
	}
	// After the boot the alarm caused:
	k.Advance(time.Hour)
	if w := s.AfterBoot(t0.Add(time.Hour)); w.Reason != wake.ReasonRTC {
		t.Errorf("AfterBoot at the planned time = %+v, want rtc", w)
	}
	if w := s.AfterBoot(t0.Add(3 * time.Hour)); w.Reason != wake.ReasonUnknown {
		t.Errorf("AfterBoot before the planned time = %+v, want unknown", w)
	}
}

func TestWaitPendingWakeupEvent(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	k.WakeupEventBeforeSuspend = true
	s := newSource(t, k, rtc.Sysfs)
	w, err := s.Wait(context.Background(), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if w.Reason != wake.ReasonUnknown || !strings.Contains(w.Detail, "pending wakeup") {
		t.Errorf("Wait = %+v, want an unknown wake for the pending event", w)
	}
	if len(k.Entered()) != 0 {
		t.Errorf("suspended despite the pending event: %v", k.Entered())
	}
	if _, ok := k.Alarm(); ok {
		t.Error("alarm left armed")
	}
}

func TestWaitPastDeadlineDoesNotSuspend(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSource(t, k, rtc.Sysfs)
	w, err := s.Wait(context.Background(), t0)
	if err != nil || w.Reason != wake.ReasonRTC || len(k.Entered()) != 0 {
		t.Fatalf("Wait(now) = %+v, %v, entered %v", w, err, k.Entered())
	}
}

func TestWaitCancelledOrHaltedBeforeSuspend(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSource(t, k, rtc.Sysfs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Wait(ctx, t0.Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait(cancelled) = %v", err)
	}
	if len(k.Entered()) != 0 {
		t.Errorf("suspended with a cancelled context: %v", k.Entered())
	}
	if _, ok := k.Alarm(); ok {
		t.Error("alarm left armed")
	}
	if _, err := s.Alarm.Arm(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Halt(); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Alarm(); ok {
		t.Error("alarm armed after Halt")
	}
}

func TestNoRTC(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	for _, m := range []rtc.Method{rtc.Sysfs, rtc.Ioctl} {
		a := &rtc.Alarm{Name: "rtc1", Sys: k.Sys(), Dev: k.Dev(), Method: m, Clock: k.Clock, Ioctls: k}
		if _, err := a.Arm(t0.Add(time.Hour)); !errors.Is(err, rtc.ErrNoRTC) {
			t.Errorf("%s: Arm on a missing RTC = %v, want ErrNoRTC", m, err)
		}
	}
}

func TestRTCTimeRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{t0, time.Date(2000, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(2038, 1, 19, 3, 14, 8, 0, time.UTC)} {
		r := rtc.ToRTCTime(tm)
		if got := rtc.FromRTCTime(&r); !got.Equal(tm) {
			t.Errorf("FromRTCTime(ToRTCTime(%v)) = %v", tm, got)
		}
		if r.Mon != int32(tm.Month())-1 || r.Year != int32(tm.Year()-1900) {
			t.Errorf("ToRTCTime(%v) = %+v: month must be 0-based, year from 1900", tm, r)
		}
	}
}

func itoa(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

var errEBUSY error = syscall.EBUSY

// TestWaitWithoutDeadline: a zero until (sleep mode with no planned wake)
// suspends with no alarm armed, until an event: here the gpio-keys button,
// pressed three hours later. Without a wakeup IRQ to name it, the wake is
// unknown, never inferred as the RTC's.
func TestWaitWithoutDeadline(t *testing.T) {
	tests := []struct {
		name   string
		noIRQ  bool
		want   wake.Reason
		detail string
	}{
		{"button", false, wake.ReasonGPIO, "pm_wakeup_irq=17 (GPIO Key Poweroff)"},
		{"no irq", true, wake.ReasonUnknown, "no alarm was armed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := waketest.NewKernel(t, t0)
			k.NoWakeupIRQ = tt.noIRQ
			k.PressAt(t0.Add(3 * time.Hour))
			s := newSource(t, k, rtc.Sysfs)
			w, err := s.Wait(context.Background(), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if w.Reason != tt.want || !strings.Contains(w.Detail, tt.detail) || w.Slept.Suspended() != 3*time.Hour {
				t.Errorf("Wait(zero) = %v (%s), suspended %v; want %v (%q) after 3h suspended", w.Reason, w.Detail, w.Slept.Suspended(), tt.want, tt.detail)
			}
			if diff := cmp.Diff([]string{"freeze"}, k.Entered()); diff != "" {
				t.Errorf("states entered (-want +got):\n%s", diff)
			}
			for _, wr := range k.Writes() {
				if strings.HasPrefix(wr, "wakealarm=") && wr != "wakealarm=0" {
					t.Errorf("an alarm was armed: %s", wr)
				}
			}
		})
	}
}

// TestPowerOffWithoutDeadline: powering off with no alarm is refused
// unless a wakeup key can bring the board back.
func TestPowerOffWithoutDeadline(t *testing.T) {
	for _, keys := range [][]string{nil, {waketest.KeyLabel}} {
		k := waketest.NewKernel(t, t0)
		s := newSource(t, k, rtc.Sysfs)
		s.State, s.Keys = suspend.PowerOff, keys
		off := 0
		s.System.PowerOff = func() error {
			off++
			if _, armed := k.Alarm(); armed {
				t.Error("an alarm was armed for a power-off with no deadline")
			}
			return errors.New("reboot: operation not permitted")
		}
		_, err := s.Wait(context.Background(), time.Time{})
		switch {
		case keys == nil && (!errors.Is(err, rtc.ErrNeverWakes) || off != 0):
			t.Errorf("Wait(zero) powering off with no key = %v, %d power-offs; want ErrNeverWakes, none", err, off)
		case keys != nil && off != 1:
			t.Errorf("Wait(zero) powering off with a wakeup key = %v, %d power-offs; want one", err, off)
		}
	}
}
