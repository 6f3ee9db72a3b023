package waketest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"golang.org/x/sys/unix"
)

// IRQ numbers and handler names of the fake machine, as on QEMU's virt
// board with Debian's kernel.
const (
	RTCIRQ  = 16
	KeysIRQ = 17
	// KeyLabel is the gpio-keys button's label, which is its IRQ handler
	// name.
	KeyLabel = "GPIO Key Poweroff"
	// RTCName is what /sys/class/rtc/rtc0/name reads.
	RTCName = "rtc-pl031 9010000.pl031"
)

// Kernel is a fake Linux kernel behind a sysfs and /dev tree in a temporary
// directory. Point a component's Sys and Dev roots at Kernel.Sys() and
// Kernel.Dev(), and its WriteFile (and rtc Ioctls) at the Kernel, and it
// sees the kernel's behaviour: reads are real file reads of the tree,
// writes to sysfs attributes go through WriteFile, which applies the
// kernel's rules. Time moves only through Advance and through a suspend
// that an armed alarm or a scheduled key press ends.
type Kernel struct {
	Clock  *clocktest.Clock
	Clocks *KernelClock
	// NoWakeupIRQ hides /sys/power/pm_wakeup_irq, as on kernels without
	// CONFIG_PM_DEBUG, so the wake reason must be inferred.
	NoWakeupIRQ bool
	// WakeupEventBeforeSuspend makes the next wakeup_count write fail with
	// EINVAL, as when an event arrives between reading and writing it.
	WakeupEventBeforeSuspend bool

	t    testing.TB
	root string

	mu sync.Mutex
	// mu guards all following fields.
	rtcOffset time.Duration // RTC time minus wall time
	alarm     int64         // armed alarm in RTC seconds, 0 when none
	presses   []time.Time   // scheduled gpio-keys presses, wall time
	entered   []string
	writes    []string
}

// NewKernel builds the tree for a machine whose wall clock reads now, with
// rtc0 (a PL031), /sys/power offering freeze, mem and disk, and IRQs for the
// RTC and a gpio-keys button.
func NewKernel(t testing.TB, now time.Time) *Kernel {
	t.Helper()
	k := &Kernel{Clock: clocktest.New(now), Clocks: NewKernelClock(10 * time.Second), t: t, root: t.TempDir()}
	k.mkfile("sys/class/rtc/rtc0/name", RTCName)
	k.mkfile("sys/class/rtc/rtc0/wakealarm", "")
	k.mkfile("sys/power/state", "freeze mem disk")
	k.mkfile("sys/power/mem_sleep", "[s2idle]")
	k.mkfile("sys/power/wakeup_count", "3")
	k.mkfile("sys/kernel/irq/16/actions", "rtc-pl031")
	k.mkfile("sys/kernel/irq/17/actions", KeyLabel)
	k.mkfile("sys/kernel/irq/33/actions", "uart-pl011")
	k.mkfile("dev/rtc0", "")
	k.syncLocked()
	return k
}

// Sys returns the root of the fake sysfs; Dev the root of the fake /dev.
func (k *Kernel) Sys() string { return filepath.Join(k.root, "sys") }

// Dev returns the root of the fake /dev.
func (k *Kernel) Dev() string { return filepath.Join(k.root, "dev") }

func (k *Kernel) mkfile(rel, content string) {
	k.t.Helper()
	p := filepath.Join(k.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		k.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

// SetRTCOffset makes the RTC read off from the wall clock (a drifting RTC,
// or a system clock that NTP stepped after boot).
func (k *Kernel) SetRTCOffset(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rtcOffset = d
	k.syncLocked()
}

// RTCNow returns the fake RTC's time.
func (k *Kernel) RTCNow() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rtcNowLocked()
}

func (k *Kernel) rtcNowLocked() time.Time {
	return k.Clock.Now().Add(k.rtcOffset).Truncate(time.Second).UTC()
}

// syncLocked rewrites the files that show the time and the alarm.
func (k *Kernel) syncLocked() {
	k.mkfile("sys/class/rtc/rtc0/since_epoch", strconv.FormatInt(k.rtcNowLocked().Unix(), 10))
	a := ""
	if k.alarm != 0 {
		a = strconv.FormatInt(k.alarm, 10)
	}
	k.mkfile("sys/class/rtc/rtc0/wakealarm", a)
}

// Advance lets d pass with the system awake.
func (k *Kernel) Advance(d time.Duration) {
	k.Clock.Advance(d)
	k.Clocks.Run(d)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.syncLocked()
}

// PressAt schedules a press of the gpio-keys button at wall time t. A
// press ends a suspend that is still going on at t.
func (k *Kernel) PressAt(t time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.presses = append(k.presses, t)
	sort.Slice(k.presses, func(i, j int) bool { return k.presses[i].Before(k.presses[j]) })
}

// Alarm returns the armed alarm in RTC seconds and whether one is armed.
func (k *Kernel) Alarm() (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return time.Unix(k.alarm, 0).UTC(), k.alarm != 0
}

// Entered returns the states written to /sys/power/state, in order.
func (k *Kernel) Entered() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.entered...)
}

// Writes returns every sysfs write as "attr=value", in order.
func (k *Kernel) Writes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.writes...)
}

// WriteFile plays the kernel's side of a write to a sysfs attribute.
func (k *Kernel) WriteFile(name string, data []byte) error {
	rel, err := filepath.Rel(k.root, name)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("waketest: write outside the fake tree: %s", name)
	}
	v := strings.TrimSpace(string(data))
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writes = append(k.writes, filepath.Base(rel)+"="+v)
	switch rel {
	case "sys/class/rtc/rtc0/wakealarm":
		return k.writeAlarmLocked(v)
	case "sys/power/wakeup_count":
		if k.WakeupEventBeforeSuspend {
			k.WakeupEventBeforeSuspend = false
			return &os.PathError{Op: "write", Path: name, Err: syscall.EINVAL}
		}
		return nil
	case "sys/power/state":
		return k.enterLocked(name, v)
	}
	return &os.PathError{Op: "write", Path: name, Err: syscall.EACCES}
}

// writeAlarmLocked follows drivers/rtc/sysfs.c wakealarm_store.
func (k *Kernel) writeAlarmLocked(v string) error {
	now := k.rtcNowLocked().Unix()
	var at int64
	switch {
	case strings.HasPrefix(v, "+="):
		n, err := strconv.ParseInt(v[2:], 10, 64)
		if err != nil || k.alarm == 0 {
			return syscall.EINVAL
		}
		at = k.alarm + n
	case strings.HasPrefix(v, "+"):
		n, err := strconv.ParseInt(v[1:], 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		at = now + n
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		at = n
	}
	if at <= now { // "0" or any past time disarms
		k.alarm = 0
	} else if k.alarm != 0 && !strings.HasPrefix(v, "+=") {
		return syscall.EBUSY
	} else {
		k.alarm = at
	}
	k.syncLocked()
	return nil
}

// enterLocked plays a suspend: time passes, suspended, until the alarm or
// the first scheduled press, whichever is first; the write then returns.
func (k *Kernel) enterLocked(name, state string) error {
	if state != "freeze" && state != "mem" && state != "disk" {
		return &os.PathError{Op: "write", Path: name, Err: syscall.EINVAL}
	}
	k.entered = append(k.entered, state)
	now := k.Clock.Now()
	wake, irq := time.Time{}, 0
	if k.alarm != 0 {
		wake, irq = time.Unix(k.alarm, 0).Add(-k.rtcOffset), RTCIRQ
	}
	for len(k.presses) > 0 && k.presses[0].Before(now) {
		k.presses = k.presses[1:] // presses while awake do not wake a later suspend
	}
	if len(k.presses) > 0 && (irq == 0 || k.presses[0].Before(wake)) {
		wake, irq = k.presses[0], KeysIRQ
		k.presses = k.presses[1:]
	}
	if irq == 0 {
		return errors.New("waketest: suspend with no wakeup source armed would never resume")
	}
	d := max(wake.Sub(now), 0)
	k.Clock.Advance(d)
	k.Clocks.Suspend(d)
	if irq == RTCIRQ {
		k.alarm = 0
	}
	k.syncLocked()
	p := filepath.Join(k.root, "sys/power/pm_wakeup_irq")
	if k.NoWakeupIRQ {
		os.Remove(p)
		return nil
	}
	return os.WriteFile(p, []byte(strconv.Itoa(irq)), 0o644)
}

// ReadTime implements rtc.Ioctls (RTC_RD_TIME).
func (k *Kernel) ReadTime(fd int) (*unix.RTCTime, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t := toRTC(k.rtcNowLocked())
	return &t, nil
}

// SetWakeAlarm implements rtc.Ioctls (RTC_WKALM_SET). Like the kernel it
// accepts a past time with enabled set; it arms nothing then.
func (k *Kernel) SetWakeAlarm(fd int, a *unix.RTCWkAlrm) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	at := fromRTC(&a.Time).Unix()
	k.writes = append(k.writes, fmt.Sprintf("RTC_WKALM_SET=%d,%d", a.Enabled, at))
	if a.Enabled == 0 || at <= k.rtcNowLocked().Unix() {
		k.alarm = 0
	} else {
		k.alarm = at
	}
	k.syncLocked()
	return nil
}

// ReadWakeAlarm implements rtc.Ioctls (RTC_WKALM_RD).
func (k *Kernel) ReadWakeAlarm(fd int) (*unix.RTCWkAlrm, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.alarm == 0 {
		return &unix.RTCWkAlrm{Time: toRTC(k.rtcNowLocked())}, nil
	}
	return &unix.RTCWkAlrm{Enabled: 1, Time: toRTC(time.Unix(k.alarm, 0))}, nil
}

// Meter returns a sleeptime.Meter on the fake clocks.
func (k *Kernel) Meter() sleeptime.Meter { return sleeptime.Meter{Clock: k.Clock, Kernel: k.Clocks} }

func toRTC(t time.Time) unix.RTCTime {
	t = t.UTC()
	return unix.RTCTime{Sec: int32(t.Second()), Min: int32(t.Minute()), Hour: int32(t.Hour()),
		Mday: int32(t.Day()), Mon: int32(t.Month()) - 1, Year: int32(t.Year() - 1900)}
}

func fromRTC(r *unix.RTCTime) time.Time {
	return time.Date(int(r.Year)+1900, time.Month(r.Mon+1), int(r.Mday), int(r.Hour), int(r.Min), int(r.Sec), 0, time.UTC)
}
