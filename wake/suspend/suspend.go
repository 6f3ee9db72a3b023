// Package suspend puts a Linux system to sleep through /sys/power and reports
// what woke it. wake/rtc arms its alarm and then calls System.Suspend; a
// gpio-keys wakeup source declared by the board profile ends the same
// suspend when its line moves.
//
// # Kernel interface
//
// Suspend follows the kernel's documented protocol
// (Documentation/ABI/testing/sysfs-power): it reads /sys/power/wakeup_count
// and writes the value back, which fails when a wakeup event arrived in the
// meantime (ErrWakeupPending: suspending then would sleep through it), and
// then writes the state ("freeze" for suspend-to-idle, "mem" for the
// platform's deepest suspend) to /sys/power/state. That write blocks until
// the system has resumed. The interrupt that woke it is read from
// /sys/power/pm_wakeup_irq (present with CONFIG_PM_DEBUG, as in Debian's
// arm64 kernel) and named through /sys/kernel/irq/N/actions, where each
// driver's handler name appears ("rtc-pl031", or a gpio-keys button's label
// such as "GPIO Key Poweroff"). Kernels without it leave the reason to the
// caller's inference.
//
// PowerOff syncs and powers the system off (reboot(2)); on boards that wake
// from halt on an RTC alarm (Raspberry Pi 5 with POWER_OFF_ON_HALT=1) or on a
// GPIO (a halted Pi 1–4 boots when GPIO3 is pulled low) that is the deepest
// sleep there is. It returns only on failure.
//
// Every path sits under System.Sys and every write goes through
// System.WriteFile, so tests run on a fake tree with a fake kernel
// (wake/waketest.Kernel), never on the machine's own /sys.
package suspend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// State is a system sleep state.
type State string

const (
	// Freeze is suspend-to-idle (s2idle): every board with CONFIG_SUSPEND
	// has it, including QEMU's virt machine and the Raspberry Pi.
	Freeze State = "freeze"
	// Mem is the deepest suspend /sys/power/mem_sleep selects (S3 where
	// the platform has it; on boards without PSCI SYSTEM_SUSPEND it is
	// s2idle again).
	Mem State = "mem"
	// PowerOff halts the system; only a board that wakes from halt comes
	// back, through a boot.
	PowerOff State = "poweroff"
)

// ParseState returns the state named s (freeze, mem or poweroff).
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case Freeze, Mem, PowerOff:
		return st, nil
	}
	return "", fmt.Errorf("suspend: unknown sleep state %q (want freeze, mem or poweroff)", s)
}

var (
	// ErrUnsupported is returned (wrapped) when the kernel does not list
	// the requested state in /sys/power/state.
	ErrUnsupported = errors.New("suspend: sleep state not supported by the kernel")
	// ErrWakeupPending is returned (wrapped) when a wakeup event arrived
	// between reading and writing /sys/power/wakeup_count, or the kernel
	// refused the suspend because one is in progress. The system did not
	// sleep; the caller should handle the event and try again.
	ErrWakeupPending = errors.New("suspend: wakeup event pending")
)

// System enters sleep states. The zero value uses the real /sys and the
// real clocks.
type System struct {
	// Sys is where sysfs is mounted; "" means /sys.
	Sys string
	// WriteFile writes a sysfs attribute; nil means os.WriteFile. Tests
	// set it to a fake kernel that plays the blocking write to
	// power/state.
	WriteFile func(name string, data []byte) error
	// PowerOff powers the system off; nil means sync(2) and
	// reboot(LINUX_REBOOT_CMD_POWER_OFF). If it returns nil (only fakes
	// do), Suspend goes on as after a resume.
	PowerOff func() error
	// Meter measures the time asleep; its zero value uses the real clocks.
	Meter sleeptime.Meter
}

// Resume is what the system found when it woke.
type Resume struct {
	State State
	// IRQ is the interrupt the kernel reported as the wakeup, or 0.
	IRQ int
	// Actions names the handlers of IRQ, e.g. ["rtc-pl031"].
	Actions []string
	// At is the wall-clock time of the resume, with no monotonic reading.
	At time.Time
	// Slept is the time spent in the state-entering write.
	Slept sleeptime.Span
}

// Matches reports whether one of the wakeup IRQ's handler names equals one
// of names or contains it as a word, ignoring case.
func (r Resume) Matches(names ...string) bool {
	for _, a := range r.Actions {
		for _, n := range names {
			if n != "" && containsWord(strings.ToLower(a), strings.ToLower(n)) {
				return true
			}
		}
	}
	return false
}

func containsWord(s, w string) bool {
	for i := strings.Index(s, w); i >= 0; {
		end := i + len(w)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		j := strings.Index(s[i+1:], w)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func (s *System) path(rel ...string) string {
	root := s.Sys
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(append([]string{root}, rel...)...)
}

func (s *System) write(name, data string) error {
	if s.WriteFile != nil {
		return s.WriteFile(name, []byte(data))
	}
	return os.WriteFile(name, []byte(data), 0)
}

// Supported returns the states the kernel lists in /sys/power/state, plus
// PowerOff, which every kernel has.
func (s *System) Supported() ([]State, error) {
	b, err := os.ReadFile(s.path("power", "state"))
	if err != nil {
		return nil, fmt.Errorf("suspend: %w", err)
	}
	var out []State
	for _, f := range strings.Fields(string(b)) {
		if st := State(f); st == Freeze || st == Mem {
			out = append(out, st)
		}
	}
	return append(out, PowerOff), nil
}

// Suspend puts the system into state and returns when it has resumed. It
// returns ctx.Err() without sleeping when ctx is already done (a write to
// /sys/power/state cannot be interrupted once made), ErrUnsupported when
// the kernel lacks the state and ErrWakeupPending when a wakeup event
// cancels the suspend. For PowerOff it returns only if powering off failed.
func (s *System) Suspend(ctx context.Context, state State) (Resume, error) {
	if err := ctx.Err(); err != nil {
		return Resume{}, err
	}
	if err := s.check(state); err != nil {
		return Resume{}, err
	}
	if err := s.claimWakeupCount(); err != nil {
		return Resume{}, err
	}
	mark := s.Meter.Mark()
	if err := s.enter(state); err != nil {
		return Resume{}, err
	}
	r := Resume{State: state, Slept: s.Meter.Since(mark)}
	r.At = mark.Wall.Add(r.Slept.Wall)
	r.IRQ, r.Actions = s.wakeupIRQ()
	return r, nil
}

func (s *System) check(state State) error {
	if _, err := ParseState(string(state)); err != nil {
		return err
	}
	if state == PowerOff {
		return nil
	}
	sup, err := s.Supported()
	if err != nil {
		return err
	}
	for _, st := range sup {
		if st == state {
			return nil
		}
	}
	return fmt.Errorf("%w: %q not in %s", ErrUnsupported, state, s.path("power", "state"))
}

// claimWakeupCount does the read-then-write handshake of
// /sys/power/wakeup_count. A kernel without the file (no
// CONFIG_PM_SLEEP) skips it.
func (s *System) claimWakeupCount() error {
	name := s.path("power", "wakeup_count")
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	n := strings.TrimSpace(string(b))
	if err := s.write(name, n); err != nil {
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w: wakeup_count moved past %s", ErrWakeupPending, n)
		}
		return fmt.Errorf("suspend: %w", err)
	}
	return nil
}

func (s *System) enter(state State) error {
	if state == PowerOff {
		off := s.PowerOff
		if off == nil {
			off = powerOff
		}
		if err := off(); err != nil {
			return fmt.Errorf("suspend: powering off: %w", err)
		}
		return nil
	}
	if err := s.write(s.path("power", "state"), string(state)); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w: %v", ErrWakeupPending, err)
		}
		return fmt.Errorf("suspend: entering %s: %w", state, err)
	}
	return nil
}

// wakeupIRQ reads the IRQ that ended the last suspend and its handler
// names. The kernel answers ENODATA when none was recorded.
func (s *System) wakeupIRQ() (int, []string) {
	b, err := os.ReadFile(s.path("power", "pm_wakeup_irq"))
	if err != nil {
		return 0, nil
	}
	irq, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || irq <= 0 {
		return 0, nil
	}
	b, err = os.ReadFile(s.path("kernel", "irq", strconv.Itoa(irq), "actions"))
	if err != nil {
		return irq, nil
	}
	var names []string
	for _, a := range strings.Split(strings.TrimSpace(string(b)), ",") {
		if a = strings.TrimSpace(a); a != "" {
			names = append(names, a)
		}
	}
	return irq, names
}
