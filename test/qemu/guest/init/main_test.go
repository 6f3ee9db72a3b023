package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCmdline(t *testing.T) {
	p, err := parseCmdline(`console=ttyAMA0 panic=-1 torpor.modules=a.ko,b/c.ko torpor.net=10.0.2.15/24 torpor.mount=/dev/vda:/data:ext4 ` +
		`torpor.run=/bin/probe torpor.arg=-mode torpor.arg=rtc torpor.arg="two words" torpor.env=A=1 ` +
		`torpor.write=/proc/sys/kernel/printk=8 torpor.write=/sys/power/pm_debug_messages=1 torpor.clockstep=-1h torpor.timesync=http://10.0.2.2:8123/ quiet` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := params{modules: []string{"a.ko", "b/c.ko"}, mounts: [][3]string{{"/dev/vda", "/data", "ext4"}}, net: "10.0.2.15/24", run: "/bin/probe",
		args: []string{"-mode", "rtc", "two words"}, env: []string{"A=1"},
		writes: [][2]string{{"/proc/sys/kernel/printk", "8"}, {"/sys/power/pm_debug_messages", "1"}}, clockStep: -time.Hour, timeSync: "http://10.0.2.2:8123/"}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(params{})); diff != "" {
		t.Errorf("parseCmdline (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"torpor.bogus=1", "torpor.write=relative=1", "torpor.write=/novalue", "torpor.mount=/dev/vda:/data", "torpor.mount=vda:/data:ext4", "torpor.mount=/dev/vda:data:ext4"} {
		if _, err := parseCmdline(bad); err == nil {
			t.Errorf("parseCmdline(%q) accepted", bad)
		}
	}
}
