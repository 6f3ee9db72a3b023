// Package rtc wakes a Linux system with its real-time clock's wake alarm.
//
// An Alarm arms /sys/class/rtc/rtcN/wakealarm (the default) or the
// RTC_WKALM_SET ioctl on /dev/rtcN (golang.org/x/sys/unix, no cgo). A
// Source arms the alarm for the planned wake, suspends the system through
// wake/suspend (freeze, mem, or power-off on boards that wake from halt)
// and, after the resume, says what woke it: the RTC, a gpio-keys wakeup
// source the board declares, or something else.
//
// # Kernel behaviour (Linux 6.1, verified under QEMU's PL031)
//
//   - wakealarm takes decimal seconds in the RTC's own time base, which is
//     since_epoch in the same directory, not the system clock: the two
//     differ on a board whose clock was set by NTP after boot or whose RTC
//     drifts. Arm converts: target = since_epoch + (wake − now), rounded up
//     to whole seconds.
//   - Writing a time while an alarm is armed fails with EBUSY, so Arm
//     writes "0" (disarm) first. A time at or before now disarms instead of
//     firing, so Arm never writes one: a deadline less than a second away
//     is armed one second ahead.
//   - RTC_WKALM_SET with a past time succeeds and leaves an alarm event
//     pending; the ioctl path refuses such times for the same reason.
//   - The RTC is in UTC (RTC_HCTOSYS); RTC_WKALM_SET takes broken-down
//     time with a 0-based month and years since 1900.
//   - After a wake, wakealarm reads "" again.
//
// Raspberry Pi 0–4 have no RTC; an RTC HAT (DS3231 and friends through the
// kernel's rtc-ds1307 driver, with dtoverlay=i2c-rtc,ds3231) gives them
// /dev/rtc0 and this package works unchanged. A Pi 5's own RTC (rpi-rtc)
// can also wake it from halt: State poweroff with POWER_OFF_ON_HALT=1 in
// the bootloader configuration.
package rtc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"golang.org/x/sys/unix"
)

// Method is how an Alarm talks to the RTC.
type Method string

const (
	// Sysfs writes /sys/class/rtc/rtcN/wakealarm (the default).
	Sysfs Method = "sysfs"
	// Ioctl uses RTC_RD_TIME and RTC_WKALM_SET/RD on /dev/rtcN.
	Ioctl Method = "ioctl"
)

// ErrNoRTC is returned (wrapped) when the RTC device does not exist.
var ErrNoRTC = errors.New("rtc: no such RTC")

// Ioctls is the RTC character device interface an Alarm uses with the
// Ioctl method. The real one wraps unix.IoctlGetRTCTime and friends; tests
// use wake/waketest.Kernel.
type Ioctls interface {
	ReadTime(fd int) (*unix.RTCTime, error)
	SetWakeAlarm(fd int, a *unix.RTCWkAlrm) error
	ReadWakeAlarm(fd int) (*unix.RTCWkAlrm, error)
}

// Alarm is one RTC's wake alarm. It is safe for use by one goroutine at a
// time.
type Alarm struct {
	// Name is the RTC's name: "rtc0" when empty.
	Name string
	// Sys and Dev are where sysfs and devtmpfs are mounted: "/sys" and
	// "/dev" when empty.
	Sys, Dev string
	// Method selects sysfs (default) or ioctl.
	Method Method
	// Clock is the wall clock the wake time is given on; nil means
	// clock.Real.
	Clock clock.Clock
	// WriteFile writes a sysfs attribute; nil means os.WriteFile.
	WriteFile func(name string, data []byte) error
	// Ioctls replaces the ioctl calls; nil means the kernel's.
	Ioctls Ioctls
}

// DeviceName returns the RTC's name, rtc0 by default.
func (a *Alarm) DeviceName() string {
	if a.Name == "" {
		return "rtc0"
	}
	return a.Name
}

func (a *Alarm) sysPath(attr string) string {
	root := a.Sys
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(root, "class", "rtc", a.DeviceName(), attr)
}

func (a *Alarm) devPath() string {
	root := a.Dev
	if root == "" {
		root = "/dev"
	}
	return filepath.Join(root, a.DeviceName())
}

func (a *Alarm) write(attr, v string) error {
	name := a.sysPath(attr)
	var err error
	if a.WriteFile != nil {
		err = a.WriteFile(name, []byte(v))
	} else {
		err = os.WriteFile(name, []byte(v), 0)
	}
	if err != nil {
		return fmt.Errorf("rtc: writing %q to %s: %w", v, name, err)
	}
	return nil
}

func (a *Alarm) readAttr(attr string) (string, error) {
	b, err := os.ReadFile(a.sysPath(attr))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s", ErrNoRTC, a.sysPath(attr))
	}
	if err != nil {
		return "", fmt.Errorf("rtc: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Label returns the RTC's driver name as sysfs shows it (for a PL031,
// "rtc-pl031 9010000.pl031"), or "" when it cannot be read.
func (a *Alarm) Label() string {
	s, _ := a.readAttr("name")
	return s
}

// Now returns the RTC's time.
func (a *Alarm) Now() (time.Time, error) {
	if a.Method == Ioctl {
		return a.ioctlNow()
	}
	s, err := a.readAttr("since_epoch")
	if err != nil {
		return time.Time{}, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("rtc: since_epoch %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Arm sets the alarm to fire at the wall-clock time at (on a.Clock),
// converted to the RTC's time base, and returns the time armed in that
// base. The RTC counts whole seconds, so the alarm fires within a second
// either side of at. A time less than a second ahead, or past, is armed
// one second after the RTC's current second.
//
// The RTC counts real seconds, so a.Clock must not be a *clock.Scaled: a
// compressed day cannot be kept by whole real seconds (at a scale of 240
// one is four minutes), and Arm refuses it.
func (a *Alarm) Arm(at time.Time) (time.Time, error) {
	if sc, ok := a.Clock.(*clock.Scaled); ok {
		return time.Time{}, fmt.Errorf("rtc: the clock runs %g times faster than real time, but the RTC counts real seconds", sc.Factor())
	}
	rtcNow, err := a.Now()
	if err != nil {
		return time.Time{}, err
	}
	d := at.Round(0).Sub(clock.Or(a.Clock).Now().Round(0))
	// Round up. The RTC's current second is already partly gone (its
	// phase is unknown), so the alarm still fires within a second either
	// side of at.
	secs := int64((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	target := rtcNow.Add(time.Duration(secs) * time.Second)
	if a.Method == Ioctl {
		return target, a.ioctlArm(target)
	}
	if err := a.write("wakealarm", "0"); err != nil {
		return time.Time{}, err
	}
	return target, a.write("wakealarm", strconv.FormatInt(target.Unix(), 10))
}

// Disarm clears the alarm. Disarming an alarm that is not armed is not an
// error.
func (a *Alarm) Disarm() error {
	if a.Method == Ioctl {
		return a.ioctlDisarm()
	}
	return a.write("wakealarm", "0")
}

// Halt disarms the alarm (conn.Resource style: inert afterwards).
func (a *Alarm) Halt() error { return a.Disarm() }

// Armed returns the armed alarm time in the RTC's base, and false when no
// alarm is armed.
func (a *Alarm) Armed() (time.Time, bool, error) {
	if a.Method == Ioctl {
		return a.ioctlArmed()
	}
	s, err := a.readAttr("wakealarm")
	if err != nil || s == "" {
		return time.Time{}, false, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("rtc: wakealarm %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), true, nil
}
