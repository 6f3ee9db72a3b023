//go:build integration

package packages

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// ARM ELF header flags (ELF for the Arm Architecture, section 5.2).
const (
	efARMEABIMask      = 0xff000000
	efARMEABIVer5      = 0x05000000
	efARMABIFloatSoft  = 0x00000200
	efARMABIFloatHard  = 0x00000400
	elf32FlagsOffset   = 36 // e_flags in an Elf32_Ehdr
	elf32HeaderMinSize = 52
)

var machines = map[string]struct {
	machine elf.Machine
	class   elf.Class
}{
	"amd64": {elf.EM_X86_64, elf.ELFCLASS64},
	"arm64": {elf.EM_AARCH64, elf.ELFCLASS64},
	"arm":   {elf.EM_ARM, elf.ELFCLASS32},
}

func TestBinaries(t *testing.T) {
	for _, p := range want {
		t.Run(p.String(), func(t *testing.T) {
			bin := filepath.Join(extract(t, p), "usr", "bin", p.name)
			checkELF(t, p, bin)
			checkBuildInfo(t, p, bin)
		})
	}
}

// checkELF checks the machine, class, byte order, static linking and
// stripping, and for 32-bit ARM the EABI version and the absence of a
// float-ABI claim.
func checkELF(t *testing.T, p pkg, bin string) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := machines[p.goarch]
	if f.Machine != m.machine || f.Class != m.class || f.Data != elf.ELFDATA2LSB {
		t.Errorf("%s: ELF %v %v %v, want %v %v %v", p, f.Machine, f.Class, f.Data, m.machine, m.class, elf.ELFDATA2LSB)
	}
	if f.Type != elf.ET_EXEC {
		t.Errorf("%s: ELF type %v, want ET_EXEC", p, f.Type)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: has %v: not statically linked (CGO_ENABLED=0)", p, prog.Type)
		}
	}
	for _, name := range []string{".symtab", ".debug_info", ".zdebug_info"} {
		if f.Section(name) != nil {
			t.Errorf("%s: has %s: not stripped (-ldflags=-s -w)", p, name)
		}
	}
	if p.goarch != "arm" {
		return
	}
	raw, err := os.ReadFile(bin)
	if err != nil || len(raw) < elf32HeaderMinSize {
		t.Fatalf("%s: reading the ELF header: %v", p, err)
	}
	flags := binary.LittleEndian.Uint32(raw[elf32FlagsOffset:])
	if flags&efARMEABIMask != efARMEABIVer5 {
		t.Errorf("%s: e_flags %#x: EABI version %#x, want 5", p, flags, flags&efARMEABIMask>>24)
	}
	// Go records no float ABI: a static binary calls no C code, so it
	// runs on armel and armhf systems alike; GOARM decides the CPU.
	if flags&(efARMABIFloatSoft|efARMABIFloatHard) != 0 {
		t.Errorf("%s: e_flags %#x claims a float ABI; Go binaries make none", p, flags)
	}
	if f.Section(".ARM.attributes") != nil {
		t.Errorf("%s: unexpected .ARM.attributes section", p)
	}
}

// checkBuildInfo checks the settings the Go toolchain recorded (with
// -trimpath it omits -ldflags; checkELF sees the stripping).
func checkBuildInfo(t *testing.T, p pkg, bin string) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	wantS := map[string]string{
		"GOOS": "linux", "GOARCH": p.goarch, "GOARM": p.goarm,
		"CGO_ENABLED": "0", "-trimpath": "true",
	}
	for k, v := range wantS {
		if settings[k] != v {
			t.Errorf("%s: build setting %s = %q, want %q", p, k, settings[k], v)
		}
	}
	if wantPath := "github.com/torpor-dev/torpor/cmd/" + p.name; info.Path != wantPath {
		t.Errorf("%s: main package %q, want %q", p, info.Path, wantPath)
	}
}

// TestARMv6CPU runs the 32-bit ARM binaries under qemu-user on an ARM1176,
// the CPU of a Raspberry Pi Zero and 1: the armel build (GOARM=6) must run,
// the armhf build (GOARM=7) must not, and must run on a Cortex-A7. This is
// what tells the two packages apart, since their ELF headers are alike.
func TestARMv6CPU(t *testing.T) {
	qemu := testenv.RequireTool(t, "qemu-arm-static")
	tests := []struct {
		arch, cpu string
		runs      bool
	}{
		{"armel", "arm1176", true},
		{"armhf", "arm1176", false},
		{"armhf", "cortex-a7", true},
		{"armel", "cortex-a7", true},
	}
	for _, tt := range tests {
		for _, name := range []string{"torpor-agent", "torporctl"} {
			p := pkg{name: name, arch: tt.arch}
			t.Run(p.String()+"_"+tt.cpu, func(t *testing.T) {
				bin := filepath.Join(extract(t, p), "usr", "bin", name)
				cmd := exec.Command(qemu, bin, "help")
				cmd.Env = append(os.Environ(), "QEMU_CPU="+tt.cpu)
				out, err := cmd.CombinedOutput()
				if ran := err == nil && len(out) > 0; ran != tt.runs {
					t.Errorf("QEMU_CPU=%s %s help: err=%v, output %q; want running=%v", tt.cpu, p, err, firstLine(out), tt.runs)
				}
			})
		}
	}
}

// TestARM64Runs runs the arm64 binaries under qemu-aarch64.
func TestARM64Runs(t *testing.T) {
	qemu := testenv.RequireTool(t, "qemu-aarch64-static")
	for _, name := range []string{"torpor-agent", "torporctl", "torpor-relay"} {
		p := pkg{name: name, arch: "arm64"}
		t.Run(p.String(), func(t *testing.T) {
			arg := "help"
			if name == "torpor-relay" {
				arg = "-h"
			}
			out, err := exec.Command(qemu, filepath.Join(extract(t, p), "usr", "bin", name), arg).CombinedOutput()
			if err != nil || len(out) == 0 {
				t.Errorf("%s %s: %v, output %q", p, arg, err, firstLine(out))
			}
		})
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// TestExtractedAMD64Run runs the amd64 programs from a root that dpkg-deb
// -x unpacked: the relay's -h lists the flag its unit passes.
func TestExtractedAMD64Run(t *testing.T) {
	root := extract(t, pkg{name: "torpor-relay", arch: "amd64"})
	out, err := exec.Command(filepath.Join(root, "usr", "bin", "torpor-relay"), "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-data-dir") {
		t.Errorf("torpor-relay -h: %v\n%s\nwant the usage, with -data-dir", err, out)
	}
	_, version := packages(t)
	out, err = exec.Command(filepath.Join(root, "usr", "bin", "torpor-relay"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "torpor-relay "+version+" ") {
		t.Errorf("torpor-relay --version: %v\n%s\nwant the package version %s, stamped by scripts/packages.sh", err, out, version)
	}
	root = extract(t, pkg{name: "torporctl", arch: "amd64"})
	out, err = exec.Command(filepath.Join(root, "usr", "bin", "torporctl"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "torporctl "+version+" ") {
		t.Errorf("torporctl --version: %v\n%s\nwant the package version %s", err, out, version)
	}
	out, err = exec.Command(filepath.Join(root, "usr", "bin", "torporctl"), "help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "keygen") {
		t.Errorf("torporctl help: %v\n%s\nwant the command list, with keygen", err, out)
	}
}
