// Package waketest provides fakes for testing wake sources without
// hardware, root or time passing: a fake kernel clock pair
// (CLOCK_BOOTTIME/CLOCK_MONOTONIC), and a fake Linux kernel that owns a
// sysfs and /dev tree in a temporary directory and plays the kernel's side
// of the RTC wake alarm and of suspend, with the behaviour measured on
// Linux 6.1 (wakealarm EBUSY on re-arm, past times disarming, the blocking
// write to /sys/power/state, pm_wakeup_irq and irq actions).
//
// GPIO lines are faked with periph's gpiotest.Pin.
package waketest

import (
	"context"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// KernelClock is a fake sleeptime.Kernel. Run advances both clocks (time
// awake), Suspend only CLOCK_BOOTTIME (time suspended on hardware whose
// monotonic clock stops). It is safe for concurrent use.
type KernelClock struct {
	mu         sync.Mutex
	boot, mono time.Duration
}

// NewKernelClock returns clocks that read up since boot.
func NewKernelClock(up time.Duration) *KernelClock { return &KernelClock{boot: up, mono: up} }

// Read implements sleeptime.Kernel.
func (k *KernelClock) Read() sleeptime.Reading {
	k.mu.Lock()
	defer k.mu.Unlock()
	return sleeptime.Reading{Boot: k.boot, Mono: k.mono}
}

// Run advances both clocks by d.
func (k *KernelClock) Run(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.boot += d
	k.mono += d
}

// Suspend advances CLOCK_BOOTTIME alone by d.
func (k *KernelClock) Suspend(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.boot += d
}

// Waited is what a wake.Source's Wait returned.
type Waited struct {
	Wake wake.Wake
	Err  error
}

// StartWait calls s.Wait(ctx, until) on a goroutine of its own and
// returns a channel that receives what it returned.
func StartWait(ctx context.Context, s wake.Source, until time.Time) <-chan Waited {
	ch := make(chan Waited, 1)
	go func() {
		w, err := s.Wait(ctx, until)
		ch <- Waited{w, err}
	}()
	return ch
}
