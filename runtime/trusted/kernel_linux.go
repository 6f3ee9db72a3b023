package trusted

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// System reads the running kernel: adjtimex(2) in read-only mode,
// /sys/class/rtc/NAME/since_epoch, clock_gettime(CLOCK_BOOTTIME) and
// /proc/sys/kernel/random/boot_id.
var System Kernel = systemKernel{}

type systemKernel struct{}

func (systemKernel) NTP() (NTPState, error) {
	var tx unix.Timex // Modes 0: read only
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return NTPState{}, fmt.Errorf("adjtimex: %w", err)
	}
	return NTPState{
		Synced:   state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond,
	}, nil
}

func (systemKernel) RTC(name string) (time.Time, error) {
	if name == "" || strings.ContainsAny(name, "/.") {
		return time.Time{}, fmt.Errorf("RTC name %q", name)
	}
	b, err := os.ReadFile("/sys/class/rtc/" + name + "/since_epoch")
	if err != nil {
		return time.Time{}, err
	}
	s, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("since_epoch %q: %w", b, err)
	}
	return time.Unix(s, 0), nil
}

func (systemKernel) Boot() (Boot, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return Boot{}, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	id, err := bootID()
	if err != nil {
		return Boot{}, err
	}
	return Boot{ID: id, Since: time.Duration(ts.Nano())}, nil
}

// bootID reads the running kernel's boot id once: it names the boot, which
// a process does not outlive, and a wake reads it twice.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("empty boot id")
	}
	return id, nil
})
