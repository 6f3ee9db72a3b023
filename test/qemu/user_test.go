//go:build integration

package qemu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// TestQEMUUserCPUModels checks the premise of scripts/qemu-user-test.sh:
// under QEMU_CPU=arm1176 (the Pi Zero's ARMv6 core) a GOARM=6 binary runs
// and a GOARM=7 binary dies, so running the unit tests that way catches a
// wrong GOARM; and armv7 and arm64 binaries run on their CPU models. The
// binaries run through binfmt_misc, as the script's do.
func TestQEMUUserCPUModels(t *testing.T) {
	for _, q := range []string{"arm", "aarch64"} {
		if _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-" + q); err != nil {
			testenv.Unavailable(t, "binfmt_misc entry qemu-"+q+" not registered (scripts/setup.sh registers it)")
		}
	}
	tests := []struct {
		goarch, goarm, cpu string
		runs               bool
	}{
		{"arm", "6", "arm1176", true},
		{"arm", "7", "arm1176", false},
		{"arm", "7", "cortex-a7", true},
		{"arm64", "", "cortex-a53", true},
	}
	for _, tt := range tests {
		t.Run(tt.goarch+tt.goarm+"-on-"+tt.cpu, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "hello")
			if err := os.WriteFile(bin, vm.CrossBinary(t, "./test/qemu/guest/hello", tt.goarch, tt.goarm), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "QEMU_CPU="+tt.cpu)
			out, err := cmd.CombinedOutput()
			ran := err == nil && strings.Contains(string(out), `RESULT {"hello":28`)
			if ran != tt.runs {
				t.Errorf("GOARCH=%s GOARM=%s on %s: ran=%v, want %v (err %v)\n%s", tt.goarch, tt.goarm, tt.cpu, ran, tt.runs, err, out)
			}
		})
	}
}
