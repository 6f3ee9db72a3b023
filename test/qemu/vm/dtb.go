package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// PatchDTB dumps QEMU's device tree for the virt board (with the given
// memory and CPUs, as the boot will use) and patches it so that the
// gpio-keys button on PL061 line 3 is a wakeup source, and line 3 is named
// WAKE_BTN (periph's gpioioctl registers only named lines). It returns the
// path of the compiled DTB. Needs dtc (device-tree-compiler).
func PatchDTB(t testing.TB, mem, cpus int) string {
	t.Helper()
	qemu := testenv.RequireTool(t, "qemu-system-aarch64")
	dtc := testenv.RequireTool(t, "dtc")
	dir := t.TempDir()
	orig := filepath.Join(dir, "virt.dtb")
	args := append(machineArgs(mem, cpus), "-nographic", "-nic", "none")
	args[1] = "virt,dumpdtb=" + orig
	if out, err := exec.Command(qemu, args...).CombinedOutput(); err != nil {
		t.Fatalf("dumping the virt DTB: %v\n%s", err, out)
	}
	dts, err := exec.Command(dtc, "-q", "-I", "dtb", "-O", "dts", orig).Output()
	if err != nil {
		t.Fatalf("dtc decompile: %v", err)
	}
	patched, err := PatchDTS(string(dts))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "virt-wake.dts")
	out := filepath.Join(dir, "virt-wake.dtb")
	if err := os.WriteFile(src, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dtc, "-q", "-I", "dts", "-O", "dtb", "-o", out, src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dtc compile: %v\n%s", err, stderr.String())
	}
	return out
}

// PatchDTS adds "wakeup-source;" to the gpio-keys button labelled "GPIO Key
// Poweroff" and gpio-line-names to the pl061 node of a decompiled virt
// device tree.
func PatchDTS(dts string) (string, error) {
	const label = `label = "GPIO Key Poweroff";`
	if strings.Count(dts, label) != 1 {
		return "", fmt.Errorf("vm: DTS has %d gpio-keys poweroff buttons, want 1", strings.Count(dts, label))
	}
	dts = strings.Replace(dts, label, label+"\n\t\t\twakeup-source;", 1)
	i := strings.Index(dts, "pl061@")
	if i < 0 {
		return "", fmt.Errorf("vm: DTS has no pl061 node")
	}
	const cells = "#gpio-cells = <0x02>;"
	j := strings.Index(dts[i:], cells)
	if j < 0 {
		return "", fmt.Errorf("vm: pl061 node has no #gpio-cells")
	}
	at := i + j + len(cells)
	names := "\n\t\tgpio-line-names = \"\", \"\", \"\", \"WAKE_BTN\", \"\", \"\", \"\", \"\";"
	return dts[:at] + names + dts[at:], nil
}
