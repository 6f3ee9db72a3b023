//go:build !linux

package sleeptime

import "time"

var start = time.Now()

type systemKernel struct{}

// Read implements Kernel off Linux, where there is no CLOCK_BOOTTIME: both
// clocks are Go's monotonic time since the process started, so a suspend is
// not seen. Torpor's devices run Linux; this keeps the package building for
// development on other systems.
func (systemKernel) Read() Reading {
	d := time.Since(start)
	return Reading{Boot: d, Mono: d}
}
