//go:build integration

package packages

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreinstCPUCheck runs the preinst of the 32-bit ARM packages, as
// packaged, against /proc/cpuinfo files of the boards involved (as their
// kernels print them): the armhf build refuses an ARMv6 Pi Zero and points
// to armel, the armel build refuses an ARMv5 CPU without VFP, and a
// cpuinfo that describes no 32-bit ARM CPU (an arm64 kernel's own, or an
// x86 image-build host's) is not judged.
func TestPreinstCPUCheck(t *testing.T) {
	tests := []struct {
		arch, cpuinfo, action string
		env                   []string
		ok                    bool
		msg                   string // in the refusal
	}{
		{arch: "armhf", cpuinfo: "pi-zero-w", action: "install", msg: "install the armel packages"},
		{arch: "armhf", cpuinfo: "pi-zero-w", action: "upgrade", msg: "dpkg --add-architecture armel"},
		{arch: "armhf", cpuinfo: "pi3-armhf", action: "install", ok: true},
		{arch: "armhf", cpuinfo: "pi4-arm64", action: "install", ok: true},
		{arch: "armhf", cpuinfo: "x86_64", action: "install", ok: true},
		{arch: "armhf", cpuinfo: "pi-zero-w", action: "install", env: []string{"TORPOR_SKIP_CPU_CHECK=1"}, ok: true},
		{arch: "armhf", cpuinfo: "pi-zero-w", action: "abort-upgrade", ok: true},
		{arch: "armel", cpuinfo: "pi-zero-w", action: "install", ok: true},
		{arch: "armel", cpuinfo: "pi3-armhf", action: "install", ok: true},
		{arch: "armel", cpuinfo: "armv5-novfp", action: "install", msg: "ARMv5 boards without a floating-point unit"},
		{arch: "arm64", cpuinfo: "armv5-novfp", action: "install", ok: true},
	}
	for _, name := range []string{"torpor-agent", "torporctl"} {
		for _, tt := range tests {
			p := pkg{name: name, arch: tt.arch}
			t.Run(p.String()+"_"+tt.cpuinfo+"_"+tt.action, func(t *testing.T) {
				cpuinfo, err := filepath.Abs(filepath.Join("testdata", "cpuinfo", tt.cpuinfo+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				preinst := filepath.Join(control(t, p), "preinst")
				cmd := exec.Command("sh", preinst, tt.action)
				cmd.Env = append(os.Environ(), "DPKG_MAINTSCRIPT_ARCH="+tt.arch, "DPKG_MAINTSCRIPT_PACKAGE="+name, "TORPOR_CPUINFO="+cpuinfo)
				cmd.Env = append(cmd.Env, tt.env...)
				out, err := cmd.CombinedOutput()
				if (err == nil) != tt.ok {
					t.Fatalf("preinst %s on %s: err=%v, output:\n%s", tt.action, tt.cpuinfo, err, out)
				}
				if !tt.ok && (!strings.Contains(string(out), tt.msg) || !strings.Contains(string(out), name)) {
					t.Errorf("refusal does not name %s and say %q:\n%s", name, tt.msg, out)
				}
			})
		}
	}
}
