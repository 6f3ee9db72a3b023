//go:build integration

package packages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// TestUnprivilegedSleep boots Debian's arm64 kernel under QEMU and runs
// wakeprobe (wake/rtc, the agent's sleep code) as an unprivileged user
// without capabilities, as the torpor-agent unit does: before the
// package's grants it must be refused, after the packaged tmpfiles.d "z"
// lines and udev rule are applied (test/packages/grantguest) it must arm
// the PL031's alarm through sysfs, suspend to idle and be woken by it.
// This is what lets the agent run as a dedicated user rather than root.
func TestUnprivilegedSleep(t *testing.T) {
	k := vm.FindKernel(t)
	root := extract(t, pkg{name: "torpor-agent", arch: "arm64"})
	read := func(path string) []byte {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v := vm.Start(t, vm.Machine{
		Kernel: k,
		Files: map[string][]byte{
			"bin/grantguest":                   vm.GuestBinary(t, "./test/packages/grantguest"),
			"bin/wakeprobe":                    vm.GuestBinary(t, "./test/qemu/guest/wakeprobe"),
			"etc/tmpfiles.d/torpor-agent.conf": read("usr/lib/tmpfiles.d/torpor-agent.conf"),
			"etc/udev/60-torpor-agent.rules":   read("usr/lib/udev/rules.d/60-torpor-agent.rules"),
		},
		Run: "/bin/grantguest",
		Args: []string{"-tmpfiles", "/etc/tmpfiles.d/torpor-agent.conf", "-rules", "/etc/udev/60-torpor-agent.rules",
			"-uid", "998", "-gid", "998", "--", "/bin/wakeprobe", "-method", "sysfs", "-after", "3s"},
	})
	if err := v.Wait(ctx); err != nil {
		t.Fatalf("guest did not power off cleanly: %v", err)
	}
	console := strings.Join(v.Lines(), "\n")
	for _, want := range []string{
		"GRANTGUEST tmpfiles z /sys/power/state 664 0:998",
		"GRANTGUEST tmpfiles z /sys/power/wakeup_count 664 0:998",
		"GRANTGUEST udev /bin/chgrp torpor-agent /sys/devices/",
		"GRANTGUEST after exit=0",
	} {
		if !strings.Contains(console, want) {
			t.Errorf("console lacks %q", want)
		}
	}
	rs, err := vm.Results[report.Wakeprobe](v)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d RESULT lines, want 2 (before and after the grants):\n%s", len(rs), console)
	}
	t.Logf("before the grants: %+v", rs[0])
	t.Logf("after the grants: %+v", rs[1])
	if !strings.Contains(rs[0].Error, "permission denied") {
		t.Errorf("before the grants the unprivileged probe got %q, want permission denied", rs[0].Error)
	}
	r := rs[1]
	if r.Error != "" || r.Reason != "rtc" || !strings.Contains(r.Detail, "rtc-pl031") || r.SuspendOK != "1" {
		t.Errorf("after the grants: %+v, want an RTC wake from a real suspend", r)
	}
	if slept := time.Duration(r.SleptBootMS) * time.Millisecond; slept < 2*time.Second || slept > 6*time.Second {
		t.Errorf("slept %v by CLOCK_BOOTTIME, want about 3s", slept)
	}
}
