package trusted

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// kernel is a Kernel whose readings a test sets.
type kernel struct {
	ntp    NTPState
	ntpErr error
	rtc    time.Time // zero: no RTC device
	boot   Boot
}

func (k *kernel) NTP() (NTPState, error) { return k.ntp, k.ntpErr }

func (k *kernel) RTC(name string) (time.Time, error) {
	if k.rtc.IsZero() {
		return time.Time{}, errors.New("no such device")
	}
	return k.rtc, nil
}

func (k *kernel) Boot() (Boot, error) { return k.boot, nil }

// truth is the real time in these tests; the device's clock is set apart
// from it.
var truth = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t   *testing.T
	db  *bolt.DB
	sys *clocktest.Clock
	k   *kernel
}

func newEnv(t *testing.T) *env {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &env{t: t, db: db, sys: clocktest.New(truth), k: &kernel{boot: Boot{ID: "boot-1", Since: time.Minute}}}
}

func (e *env) open(rtc string) *Clock {
	e.t.Helper()
	c, err := Open(e.db, Config{Clock: e.sys, Kernel: e.k, RTC: rtc})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) establish(c *Clock) Reading {
	e.t.Helper()
	r, err := c.Establish()
	if err != nil {
		e.t.Fatalf("Establish: %v", err)
	}
	return r
}

func (e *env) untrusted(c *Clock, why string) {
	e.t.Helper()
	r, err := c.Establish()
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), why) {
		e.t.Fatalf("Establish = %v, %v; want ErrUntrusted saying %q", r.Now, err, why)
	}
	if !r.Now.IsZero() || r.Source != "" {
		e.t.Errorf("an untrusted reading has time %v from %q", r.Now, r.Source)
	}
}

func TestNTP(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	e.untrusted(c, "not synchronised (STA_UNSYNC)")
	e.k.ntp = NTPState{Synced: true, MaxError: 3 * time.Second}
	e.untrusted(c, "maximum error 3s exceeds 2s")
	e.k.ntp.MaxError = 100 * time.Millisecond
	r := e.establish(c)
	if r.Source != NTP || !r.Now.Equal(truth) || r.Forward != 0 {
		t.Errorf("synced: %+v, want ntp at %v", r, truth)
	}
	e.k.ntpErr = errors.New("adjtimex: operation not permitted")
	e.untrusted(c, "operation not permitted")
}

func TestRTC(t *testing.T) {
	e := newEnv(t)
	e.k.rtc = truth.Add(time.Second)
	r := e.establish(e.open("rtc0"))
	if r.Source != RTC || !r.Now.Equal(truth) {
		t.Errorf("an RTC that agrees: %+v, want rtc at %v", r, truth)
	}
	e.untrusted(e.open(""), "rtc: the board has none")
	// fake-hwclock set the system clock an hour back after the kernel
	// read the RTC.
	e.sys.Set(truth.Add(-time.Hour))
	e.k.rtc = truth
	e.untrusted(e.open("rtc0"), "the system clock was not set from it")
}

// TestRTCThatLostTime: an RTC without its battery reads an old time, and
// the system clock was set from it; the floor shows it lost time.
func TestRTCThatLostTime(t *testing.T) {
	e := newEnv(t)
	e.k.ntp = NTPState{Synced: true}
	c := e.open("rtc0")
	if err := c.Persist(e.establish(c).Now); err != nil {
		t.Fatal(err)
	}
	e.k.ntp = NTPState{}
	e.k.boot = Boot{ID: "boot-2", Since: 30 * time.Second}
	old := time.Date(2000, 1, 1, 0, 0, 30, 0, time.UTC)
	e.k.rtc = old
	e.sys.Set(old)
	e.untrusted(e.open("rtc0"), "it lost time")
}
