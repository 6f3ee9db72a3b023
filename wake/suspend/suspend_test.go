package suspend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/suspend"
	"github.com/torpor-dev/torpor/wake/waketest"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newSystem(k *waketest.Kernel) *suspend.System {
	return &suspend.System{Sys: k.Sys(), WriteFile: k.WriteFile, Meter: k.Meter()}
}

func TestSuspendByKey(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	k.PressAt(t0.Add(90 * time.Second))
	r, err := newSystem(k).Suspend(context.Background(), suspend.Freeze)
	if err != nil {
		t.Fatal(err)
	}
	want := suspend.Resume{State: suspend.Freeze, IRQ: waketest.KeysIRQ, Actions: []string{waketest.KeyLabel}, At: t0.Add(90 * time.Second)}
	want.Slept.Wall, want.Slept.Boot = 90*time.Second, 90*time.Second
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Suspend (-want +got):\n%s", diff)
	}
	if !r.Matches("gpio key poweroff") || r.Matches("rtc") || r.Matches("GPIO") == false {
		t.Errorf("Matches on %v wrong", r.Actions)
	}
	if diff := cmp.Diff([]string{"wakeup_count=3", "state=freeze"}, k.Writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestSuspendErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*waketest.Kernel, *suspend.System) context.Context
		state suspend.State
		want  error
	}{
		{"unsupported", func(k *waketest.Kernel, s *suspend.System) context.Context {
			os.WriteFile(filepath.Join(k.Sys(), "power", "state"), []byte("freeze"), 0o644)
			return context.Background()
		}, suspend.Mem, suspend.ErrUnsupported},
		{"pending event", func(k *waketest.Kernel, s *suspend.System) context.Context {
			k.WakeupEventBeforeSuspend = true
			return context.Background()
		}, suspend.Freeze, suspend.ErrWakeupPending},
		{"cancelled", func(k *waketest.Kernel, s *suspend.System) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, suspend.Freeze, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := waketest.NewKernel(t, t0)
			k.PressAt(t0.Add(time.Minute))
			s := newSystem(k)
			_, err := s.Suspend(tt.setup(k, s), tt.state)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Suspend = %v, want %v", err, tt.want)
			}
			if len(k.Entered()) != 0 {
				t.Errorf("entered %v despite the error", k.Entered())
			}
		})
	}
	if _, err := suspend.ParseState("hibernate"); err == nil {
		t.Error("ParseState(hibernate) succeeded")
	}
}

func TestPowerOff(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	s := newSystem(k)
	called := 0
	s.PowerOff = func() error { called++; return nil }
	r, err := s.Suspend(context.Background(), suspend.PowerOff)
	if err != nil || called != 1 || r.State != suspend.PowerOff {
		t.Fatalf("Suspend(poweroff) = %+v, %v, power-off called %d times", r, err, called)
	}
	if len(k.Entered()) != 0 {
		t.Errorf("power-off wrote /sys/power/state: %v", k.Entered())
	}
	sup, err := s.Supported()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]suspend.State{suspend.Freeze, suspend.Mem, suspend.PowerOff}, sup); diff != "" {
		t.Errorf("Supported (-want +got):\n%s", diff)
	}
}

func TestMatchesWholeWords(t *testing.T) {
	r := suspend.Resume{Actions: []string{"rtc-pl031", "GPIO Key Poweroff"}}
	tests := []struct {
		name string
		want bool
	}{
		{"rtc", true}, {"RTC-PL031", true}, {"pl031", true}, {"rt", false},
		{"gpio key poweroff", true}, {"Key", true}, {"Keys", false}, {"", false},
	}
	for _, tt := range tests {
		if got := r.Matches(tt.name); got != tt.want {
			t.Errorf("Matches(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSourceByKey(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		want  wake.Reason
		event bool
	}{
		{"declared key", []string{waketest.KeyLabel}, wake.ReasonGPIO, false},
		{"undeclared key", nil, wake.ReasonUnknown, false},
		{"pending event", nil, wake.ReasonUnknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := waketest.NewKernel(t, t0)
			k.PressAt(t0.Add(3 * time.Hour))
			k.WakeupEventBeforeSuspend = tt.event
			s := &suspend.Source{System: newSystem(k), Keys: tt.keys, Clock: k.Clock}
			w, err := s.Wait(context.Background(), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			slept := 3 * time.Hour
			if tt.event {
				slept = 0
			}
			if w.Reason != tt.want || w.Slept.Boot != slept {
				t.Errorf("Wait = %v after %v (%s), want %v after %v", w.Reason, w.Slept.Boot, w.Detail, tt.want, slept)
			}
		})
	}
}
