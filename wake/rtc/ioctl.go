package rtc

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// kernelIoctls implements Ioctls with the real RTC ioctls.
type kernelIoctls struct{}

func (kernelIoctls) ReadTime(fd int) (*unix.RTCTime, error) { return unix.IoctlGetRTCTime(fd) }

func (kernelIoctls) SetWakeAlarm(fd int, a *unix.RTCWkAlrm) error {
	return unix.IoctlSetRTCWkAlrm(fd, a)
}

func (kernelIoctls) ReadWakeAlarm(fd int) (*unix.RTCWkAlrm, error) {
	return unix.IoctlGetRTCWkAlrm(fd)
}

func (a *Alarm) ioctls() Ioctls {
	if a.Ioctls != nil {
		return a.Ioctls
	}
	return kernelIoctls{}
}

// withDev opens the RTC device for one operation. The file is opened
// read-only: the RTC ioctls need no write access.
func (a *Alarm) withDev(f func(fd int) error) error {
	dev, err := os.Open(a.devPath())
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNoRTC, a.devPath())
	}
	if err != nil {
		return fmt.Errorf("rtc: %w", err)
	}
	defer dev.Close()
	if err := f(int(dev.Fd())); err != nil {
		return fmt.Errorf("rtc: %s: %w", a.devPath(), err)
	}
	return nil
}

func (a *Alarm) ioctlNow() (time.Time, error) {
	var t time.Time
	err := a.withDev(func(fd int) error {
		rt, err := a.ioctls().ReadTime(fd)
		if err != nil {
			return fmt.Errorf("RTC_RD_TIME: %w", err)
		}
		t = FromRTCTime(rt)
		return nil
	})
	return t, err
}

func (a *Alarm) ioctlArm(target time.Time) error {
	return a.withDev(func(fd int) error {
		w := &unix.RTCWkAlrm{Enabled: 1, Time: ToRTCTime(target)}
		if err := a.ioctls().SetWakeAlarm(fd, w); err != nil {
			return fmt.Errorf("RTC_WKALM_SET: %w", err)
		}
		return nil
	})
}

func (a *Alarm) ioctlDisarm() error {
	return a.withDev(func(fd int) error {
		rt, err := a.ioctls().ReadTime(fd)
		if err != nil {
			return fmt.Errorf("RTC_RD_TIME: %w", err)
		}
		// A disabled alarm still needs a valid time.
		if err := a.ioctls().SetWakeAlarm(fd, &unix.RTCWkAlrm{Enabled: 0, Time: *rt}); err != nil {
			return fmt.Errorf("RTC_WKALM_SET: %w", err)
		}
		return nil
	})
}

func (a *Alarm) ioctlArmed() (time.Time, bool, error) {
	var (
		t  time.Time
		on bool
	)
	err := a.withDev(func(fd int) error {
		w, err := a.ioctls().ReadWakeAlarm(fd)
		if err != nil {
			return fmt.Errorf("RTC_WKALM_RD: %w", err)
		}
		on = w.Enabled != 0
		t = FromRTCTime(&w.Time)
		return nil
	})
	if err != nil || !on {
		return time.Time{}, false, err
	}
	return t, true, nil
}

// ToRTCTime converts t to the kernel's broken-down RTC time in UTC: month
// 0-based, year counted from 1900 (struct rtc_time, include/uapi/linux/rtc.h).
func ToRTCTime(t time.Time) unix.RTCTime {
	t = t.UTC()
	return unix.RTCTime{
		Sec: int32(t.Second()), Min: int32(t.Minute()), Hour: int32(t.Hour()),
		Mday: int32(t.Day()), Mon: int32(t.Month()) - 1, Year: int32(t.Year() - 1900),
		Wday: int32(t.Weekday()), Yday: int32(t.YearDay() - 1), Isdst: 0,
	}
}

// FromRTCTime converts the kernel's broken-down RTC time (UTC) to a time.
func FromRTCTime(r *unix.RTCTime) time.Time {
	return time.Date(int(r.Year)+1900, time.Month(r.Mon+1), int(r.Mday),
		int(r.Hour), int(r.Min), int(r.Sec), 0, time.UTC)
}
