package sleeptime

import (
	"time"

	"golang.org/x/sys/unix"
)

type systemKernel struct{}

// Read implements Kernel with clock_gettime(2). It cannot fail for these
// clock ids on Linux; a failure would leave the field zero.
func (systemKernel) Read() Reading {
	var b, m unix.Timespec
	// Monotonic first, so that Boot >= Mono holds within one reading.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m)
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &b)
	return Reading{Boot: time.Duration(b.Nano()), Mono: time.Duration(m.Nano())}
}
