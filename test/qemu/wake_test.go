//go:build integration

// Package qemu holds the system tests that boot Debian's arm64 kernel under
// qemu-system-aarch64 -M virt and exercise Torpor's wake code against a
// real kernel: the PL031 RTC waking the guest from suspend-to-idle, and a
// PL061 GPIO edge (QMP system_powerdown) waking it through a gpio-keys
// wakeup source. See test/qemu/vm for the harness.
//
// wake_test.go drives the wake packages through a probe program;
// agent_test.go boots the real torpor-agent, which sleeps, is woken by the
// RTC or the GPIO, and drains what a sender queued on a real torpor-relay
// on the host while it slept. footprint_test.go measures the agent's
// resident memory during a 500-record drain natively and under qemu-user
// (docs/footprint.md), and user_test.go checks the CPU models the
// qemu-user unit tests rely on. wakebench_test.go's BenchmarkEmptyWakeVM
// measures the CPU time of the agent's empty wake on the guest's kernel
// (docs/performance.md).
package qemu

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// hostServer serves what a woken agent fetches over QEMU user networking:
// a stand-in for the relay, on the host's loopback (the guest's 10.0.2.2).
func hostServer(t *testing.T, body string) (port int, hits func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := make(chan int, 1)
	n <- 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n <- <-n + 1
		fmt.Fprint(w, body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port, func() int { v := <-n; n <- v; return v }
}

func boot(t *testing.T, m vm.Machine, timeout time.Duration) (*vm.VM, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return vm.Start(t, m), ctx
}

func probeResult(t *testing.T, v *vm.VM, ctx context.Context) report.Wakeprobe {
	t.Helper()
	if err := v.Wait(ctx); err != nil {
		t.Fatalf("guest did not power off cleanly: %v", err)
	}
	rs, err := vm.Results[report.Wakeprobe](v)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d RESULT lines, want 1", len(rs))
	}
	if code, err := v.ExitCode(); err != nil || code != 0 {
		t.Fatalf("wakeprobe exit %d, %v; result %+v", code, err, rs[0])
	}
	return rs[0]
}

// sleptOK checks the time asleep measured by CLOCK_BOOTTIME against the
// alarm: the RTC counts whole seconds, so the alarm fires up to one second
// before the requested time; TCG emulation adds latency after it.
func sleptOK(t *testing.T, r report.Wakeprobe, want time.Duration) {
	t.Helper()
	got := time.Duration(r.SleptBootMS) * time.Millisecond
	if got < want-time.Second || got > want+3*time.Second {
		t.Errorf("slept %v by CLOCK_BOOTTIME, want %v (-1s, +3s)", got, want)
	}
	wall := time.Duration(r.SleptWallMS) * time.Millisecond
	if d := wall - got; d < -time.Second || d > time.Second {
		t.Errorf("wall clock says %v asleep, CLOCK_BOOTTIME %v", wall, got)
	}
}

// TestRTCWakeFromFreeze: the guest arms the PL031's wake alarm through
// wake/rtc (sysfs, then ioctl), suspends to idle and is woken by the RTC;
// then it fetches from the host over user networking.
func TestRTCWakeFromFreeze(t *testing.T) {
	k := vm.FindKernel(t)
	probe := vm.GuestBinary(t, "./test/qemu/guest/wakeprobe")
	for _, method := range []string{"sysfs", "ioctl"} {
		t.Run(method, func(t *testing.T) {
			port, hits := hostServer(t, "drained 3 records")
			v, ctx := boot(t, vm.Machine{
				Kernel: k, Files: map[string][]byte{"bin/wakeprobe": probe},
				Modules: []string{"virtio_mmio", "virtio_net"}, Net: true,
				Run: "/bin/wakeprobe", Args: []string{"-method", method, "-after", "4s",
					"-url", fmt.Sprintf("http://10.0.2.2:%d/drain", port)},
			}, 3*time.Minute)
			r := probeResult(t, v, ctx)
			t.Logf("result: %+v", r)
			if r.Reason != "rtc" || r.IRQ == 0 || !strings.Contains(r.Detail, "rtc-pl031") {
				t.Errorf("wake reason %q irq %d (%s), want rtc from the pl031 interrupt", r.Reason, r.IRQ, r.Detail)
			}
			if r.SuspendOK != "1" {
				t.Errorf("suspend_stats/success = %q, want 1: the guest did not really suspend", r.SuspendOK)
			}
			if r.AlarmAfter != "" {
				t.Errorf("wakealarm after the wake = %q, want it disarmed", r.AlarmAfter)
			}
			sleptOK(t, r, 4*time.Second)
			if r.HTTPStatus != 200 || r.HTTPBody != "drained 3 records" || hits() != 1 {
				t.Errorf("fetch after wake: status %d body %q, host saw %d requests", r.HTTPStatus, r.HTTPBody, hits())
			}
		})
	}
}

// TestGPIOWakeFromFreeze: with the device tree marking the gpio-keys
// button on PL061 line 3 wakeup-source and gpio_keys.ko loaded, the guest
// suspends to idle with an RTC fallback 60 s out; when the kernel reports
// it is in suspend-to-idle the host sends QMP system_powerdown, which
// pulses the line, and the guest must wake from the GPIO, long before the
// fallback.
func TestGPIOWakeFromFreeze(t *testing.T) {
	k := vm.FindKernel(t)
	probe := vm.GuestBinary(t, "./test/qemu/guest/wakeprobe")
	dtb := vm.PatchDTB(t, 512, 1)
	v, ctx := boot(t, vm.Machine{
		Kernel: k, DTB: dtb, Files: map[string][]byte{"bin/wakeprobe": probe},
		Modules: []string{"gpio_keys"},
		Run:     "/bin/wakeprobe", Args: []string{"-method", "sysfs", "-after", "60s", "-keys", "GPIO Key Poweroff"},
	}, 3*time.Minute)
	if _, err := v.WaitLine(ctx, "MARK suspending"); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	if _, err := v.WaitLine(ctx, "suspend-to-idle"); err != nil {
		t.Fatal(err)
	}
	q, err := v.QMP()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	pressed := time.Now()
	if _, err := q.Execute("system_powerdown", nil); err != nil {
		t.Fatal(err)
	}
	r := probeResult(t, v, ctx)
	t.Logf("result: %+v (button pressed %v after MARK)", r, pressed.Sub(frozen).Round(time.Millisecond))
	if r.Reason != "gpio" || !strings.Contains(r.Detail, "GPIO Key Poweroff") || !strings.HasPrefix(r.Source, "gpio-keys:") {
		t.Errorf("wake reason %q source %q (%s), want gpio from gpio-keys", r.Reason, r.Source, r.Detail)
	}
	if r.SuspendOK != "1" {
		t.Errorf("suspend_stats/success = %q, want 1", r.SuspendOK)
	}
	// Woken by the button, not the 60 s RTC fallback: CLOCK_BOOTTIME says
	// the sleep lasted about as long as the host took to press it.
	slept := time.Duration(r.SleptBootMS) * time.Millisecond
	if host := time.Since(frozen); slept <= 0 || slept > 30*time.Second || slept > host {
		t.Errorf("slept %v by CLOCK_BOOTTIME; host measured %v from MARK to the end", slept, host)
	}
	if r.AlarmAfter != "" {
		t.Errorf("RTC fallback alarm left armed: %q", r.AlarmAfter)
	}
}

// TestGPIOEdgeInProcess: the agent-style in-process GPIO wait (wake/board
// opening the qemu-virt profile's wake line with periph's gpioioctl, then
// wake/gpio waiting for a falling edge) sees the edge QMP system_powerdown
// puts on PL061 line 3. The stock device tree names no lines, so this also
// covers the lookup by chip and offset. The host presses until the guest
// reports, because it cannot see when the guest has requested the line.
func TestGPIOEdgeInProcess(t *testing.T) {
	k := vm.FindKernel(t)
	probe := vm.GuestBinary(t, "./test/qemu/guest/wakeprobe")
	v, ctx := boot(t, vm.Machine{
		Kernel: k, Files: map[string][]byte{"bin/wakeprobe": probe},
		Run: "/bin/wakeprobe", Args: []string{"-method", "gpio"},
	}, 3*time.Minute)
	if _, err := v.WaitLine(ctx, "MARK waiting"); err != nil {
		t.Fatal(err)
	}
	q, err := v.QMP()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	reported := make(chan struct{})
	go func() {
		v.WaitLine(ctx, "RESULT ")
		close(reported)
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	presses := 0
	for done := false; !done && presses < 60; {
		if _, err := q.Execute("system_powerdown", nil); err != nil {
			t.Fatal(err)
		}
		presses++
		select {
		case <-reported:
			done = true
		case <-tick.C:
		}
	}
	r := probeResult(t, v, ctx)
	t.Logf("result: %+v after %d presses", r, presses)
	if r.Reason != "gpio" || r.Source != "gpio:3" || !strings.Contains(r.Detail, "FallingEdge") {
		t.Errorf("wake %q from %q (%s), want a gpio falling edge", r.Reason, r.Source, r.Detail)
	}
}
