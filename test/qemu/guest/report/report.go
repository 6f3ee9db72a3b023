// Package report holds what the guest programs under test/qemu/guest print
// on the console as "RESULT <json>" lines, so that a guest program and the
// test that reads its line (vm.Results) share one definition of it.
package report

import (
	"encoding/json"
	"fmt"

	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/timesync"
)

// Wakeprobe is a RESULT line of test/qemu/guest/wakeprobe: what woke the
// guest and how long it slept.
type Wakeprobe struct {
	Method       string `json:"method"`
	Reason       string `json:"reason"`
	Source       string `json:"source"`
	IRQ          int    `json:"irq"`
	Detail       string `json:"detail"`
	SleptBootMS  int64  `json:"slept_boot_ms"`
	SleptMonoMS  int64  `json:"slept_mono_ms"`
	SleptWallMS  int64  `json:"slept_wall_ms"`
	SuspendOK    string `json:"suspend_success"`
	AlarmAfter   string `json:"alarm_after"` // wakealarm after the wake ("" = disarmed)
	HTTPStatus   int    `json:"http_status,omitempty"`
	HTTPBody     string `json:"http_body,omitempty"`
	Error        string `json:"error,omitempty"`
	RTCName      string `json:"rtc_name"`
	WakeupIRQOK  bool   `json:"wakeup_irq_present"`
	BeforeSecond int64  `json:"armed_at_unix"`
}

// Footprint is the RESULT line of test/qemu/guest/footprint: the agent's
// memory on the guest's kernel once it delivered the records.
type Footprint struct {
	Delivered int64 `json:"delivered"`
	PeakKiB   int64 `json:"peak_kib"` // VmHWM at the last delivery
	RSSKiB    int64 `json:"rss_kib"`  // VmRSS at the last delivery
	ElapsedMS int64 `json:"elapsed_ms"`
	// PeakSample is the /proc/PID/status sample with the most VmRSS,
	// taken every few milliseconds from the agent's start to the last
	// delivery: what the peak was made of.
	PeakSample procs.Memory `json:"peak_sample"`
	// BinaryKiB and DBKiB are what the agent's binary and its bbolt file
	// (agent.db) had resident at the last delivery (/proc/PID/smaps).
	BinaryKiB int64 `json:"binary_kib"`
	DBKiB     int64 `json:"db_kib"`
	// Asleep is the agent's memory once its wake ended and it slept
	// (zero when it did not log the wake's end).
	Asleep procs.Memory  `json:"asleep"`
	GC     procs.GCTrace `json:"gc"` // the agent's GODEBUG=gctrace=1 lines, to when it slept
	Error  string        `json:"error,omitempty"`
}

// Wakebench is the RESULT line of test/qemu/guest/wakebench: the CPU the
// agent's empty wakes took, and the guest clock's offset after them.
type Wakebench struct {
	Wakes wakemeter.Wakes `json:"wakes"`
	// Offset is the host's clock minus the guest's after the wakes.
	Offset timesync.Sample `json:"offset"`
	Error  string          `json:"error,omitempty"`
}

// Print writes r to standard output as one "RESULT <json>" line, the
// line vm.Results reads.
func Print(r any) {
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", b)
}
