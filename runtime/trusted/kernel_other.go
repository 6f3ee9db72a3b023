//go:build !linux

package trusted

import (
	"crypto/rand"
	"errors"
	"time"
)

// System off Linux: no adjtimex and no RTC to read, and the process's
// own start stands for a boot. Torpor's devices run Linux; this keeps the
// package building for development on other systems.
var System Kernel = systemKernel{id: rand.Text()}

var start = time.Now()

type systemKernel struct{ id string }

func (systemKernel) NTP() (NTPState, error) {
	return NTPState{}, errors.New("no adjtimex off Linux")
}

func (systemKernel) RTC(string) (time.Time, error) {
	return time.Time{}, errors.New("no RTC off Linux")
}

func (k systemKernel) Boot() (Boot, error) { return Boot{ID: k.id, Since: time.Since(start)}, nil }
