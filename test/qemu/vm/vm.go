// Package vm boots Debian's arm64 kernel under qemu-system-aarch64 -M virt
// (TCG) with an initramfs built by Torpor's own Go code, for the system
// tests in test/qemu: the guest's /init (test/qemu/guest/init) runs one
// program named on the kernel command line, whose "RESULT <json>" lines
// the host reads from the serial console. Tests pass files (binaries,
// keys, configuration) into the initramfs, press the virt board's power
// button over QMP (which pulses PL061 line 3), and reach host servers
// through QEMU user networking, where the host is 10.0.2.2.
package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/qemu/initramfs"
	"github.com/torpor-dev/torpor/test/qemu/qmp"
	"github.com/torpor-dev/torpor/test/qemu/timesync"
)

// Machine describes one boot.
type Machine struct {
	Kernel *Kernel
	// Files are added to the initramfs: path inside the guest -> content.
	// Executables go under /bin (mode 0755); everything else is 0644
	// unless Modes names it.
	Files map[string][]byte
	// Modes overrides the permission bits of files in Files (a key file
	// must be 0600).
	Modes map[string]uint32
	// Modules are kernel module names (gpio_keys, virtio_net) loaded by
	// /init before the program, with their dependencies first.
	Modules []string
	// Run and Args are the guest program and its arguments; Env holds
	// extra KEY=VALUE environment entries for it.
	Run  string
	Args []string
	Env  []string
	// Writes are "/PATH=VALUE" entries /init writes, in order, before it
	// runs the program: sysctls and sysfs attributes such as
	// /proc/sys/kernel/printk=8.
	Writes []string
	// ClockStep steps the guest's system clock by this much before the
	// program runs (as fake-hwclock sets an old time at boot); the RTC
	// keeps the host's time.
	ClockStep time.Duration
	// TimeSync is the URL of the host's time server (TimeServer) from
	// which /init sets the guest's clock before the program runs (with
	// Net): the RTC it boots from counts whole seconds.
	TimeSync string
	// Net gives the guest a virtio network card on QEMU user networking,
	// with address 10.0.2.15/24; the host is 10.0.2.2.
	Net bool
	// Forward are QEMU hostfwd rules for Net, such as
	// "tcp:127.0.0.1:8080-:8080", so that the host reaches a server in
	// the guest.
	Forward []string
	// Disk is a raw image file the guest sees as /dev/vda (virtio-blk,
	// with the modules virtio_mmio and virtio_blk), opened with
	// cache=none: a write the guest's fsync returned from has reached
	// the host's disk, and one it has not may be lost when the machine
	// is cut off (QMP quit). Mounts mounts it.
	Disk string
	// Mounts are "DEV:DIR:FS" entries /init mounts after loading the
	// modules, such as "/dev/vda:/data:ext4".
	Mounts []string
	// DTB replaces the board's device tree (see PatchDTB).
	DTB string
	// Append is added to the kernel command line.
	Append []string
	// Memory in MiB (default 512) and CPUs (default 1). PatchDTB must be
	// given the same values.
	Memory, CPUs int
	// Initrd is an initramfs WriteInitramfs made for this machine, to
	// boot it again without writing (and compressing) it again; empty
	// means Start writes one.
	Initrd string
}

// TimeServer serves the host's time (package test/qemu/timesync) on
// loopback until the test ends and returns its URL as a guest on QEMU user
// networking reaches it, for Machine.TimeSync.
func TimeServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: timesync.Handler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("http://10.0.2.2:%d/", l.Addr().(*net.TCPAddr).Port)
}

// WriteInitramfs writes the initramfs of m (/init, Files, Modules) to a
// temporary file of the test and returns its path, for Machine.Initrd.
func (m Machine) WriteInitramfs(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "initramfs.cpio.gz")
	if err := m.writeInitramfs(t, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// VM is a running guest.
type VM struct {
	t    testing.TB
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
	err  error // set before done is closed

	mu sync.Mutex
	// mu guards all following fields.
	lines   []string
	waiters []*waiter
	changed chan struct{} // closed and replaced when a line arrives
}

type waiter struct {
	match string
	ch    chan string
}

// Start builds the initramfs, boots the machine and returns at once. The
// machine is killed when the test ends; its console is logged on failure.
func Start(t testing.TB, m Machine) *VM {
	t.Helper()
	qemu := testenv.RequireTool(t, "qemu-system-aarch64")
	dir := t.TempDir()
	initrd := m.Initrd
	if initrd == "" {
		initrd = m.WriteInitramfs(t)
	}
	args := append(machineArgs(m.Memory, m.CPUs),
		"-nographic", "-no-reboot", "-serial", "stdio", "-monitor", "none",
		"-kernel", m.Kernel.Vmlinuz, "-initrd", initrd,
		"-rtc", "base=utc,clock=host",
		"-qmp", "unix:"+filepath.Join(dir, "qmp.sock")+",server=on,wait=off",
		"-append", m.cmdline())
	if m.Disk != "" {
		args = append(args, "-drive", "if=none,id=d0,format=raw,cache=none,file="+m.Disk, "-device", "virtio-blk-device,drive=d0")
	}
	if m.Net {
		netdev := "user,id=n0"
		for _, f := range m.Forward {
			netdev += ",hostfwd=" + f
		}
		args = append(args, "-netdev", netdev, "-device", "virtio-net-device,netdev=n0")
	} else {
		args = append(args, "-nic", "none")
	}
	if m.DTB != "" {
		args = append(args, "-dtb", m.DTB)
	}
	v := &VM{t: t, dir: dir, done: make(chan struct{}), changed: make(chan struct{})}
	v.cmd = exec.Command(qemu, args...)
	v.cmd.Stdin = nil
	out, err := v.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	v.cmd.Stderr = v.cmd.Stdout
	if err := v.cmd.Start(); err != nil {
		t.Fatalf("starting QEMU: %v", err)
	}
	go v.read(out)
	t.Cleanup(func() {
		v.cmd.Process.Kill()
		<-v.done
		if t.Failed() {
			t.Logf("guest console:\n%s", strings.Join(v.Lines(), "\n"))
		}
	})
	return v
}

func machineArgs(mem, cpus int) []string {
	if mem == 0 {
		mem = 512
	}
	if cpus == 0 {
		cpus = 1
	}
	return []string{"-M", "virt", "-cpu", "cortex-a53", "-smp", fmt.Sprint(cpus), "-m", fmt.Sprint(mem)}
}

func (m Machine) cmdline() string {
	parts := []string{"console=ttyAMA0", "panic=-1", "loglevel=4", "no_console_suspend"}
	var mods []string
	for _, mod := range m.Modules {
		deps, err := m.Kernel.ModuleDeps(mod)
		if err == nil {
			for _, d := range deps {
				if !contains(mods, d) {
					mods = append(mods, d)
				}
			}
		}
	}
	if len(mods) > 0 {
		parts = append(parts, "torpor.modules="+strings.Join(mods, ","))
	}
	for _, mt := range m.Mounts {
		parts = append(parts, "torpor.mount="+mt)
	}
	if m.Net {
		parts = append(parts, "torpor.net=10.0.2.15/24")
	}
	parts = append(parts, "torpor.run="+quote(m.Run))
	for _, a := range m.Args {
		parts = append(parts, "torpor.arg="+quote(a))
	}
	for _, e := range m.Env {
		parts = append(parts, "torpor.env="+quote(e))
	}
	for _, w := range m.Writes {
		parts = append(parts, "torpor.write="+quote(w))
	}
	if m.TimeSync != "" {
		parts = append(parts, "torpor.timesync="+m.TimeSync)
	}
	if m.ClockStep != 0 {
		parts = append(parts, "torpor.clockstep="+m.ClockStep.String())
	}
	return strings.Join(append(parts, m.Append...), " ")
}

func quote(s string) string {
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeInitramfs writes /init, the files and the modules.
func (m Machine) writeInitramfs(t testing.TB, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := initramfs.NewWriter(f)
	for _, d := range []string{"dev", "proc", "sys", "tmp", "bin"} {
		if err := w.Dir(d, 0o755); err != nil {
			return err
		}
	}
	if err := w.CharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := w.File("init", 0o755, GuestBinary(t, "./test/qemu/guest/init")); err != nil {
		return err
	}
	for name, data := range m.Files {
		perm := uint32(0o644)
		if strings.HasPrefix(strings.TrimPrefix(name, "/"), "bin/") {
			perm = 0o755
		}
		if p, ok := m.Modes[name]; ok {
			perm = p
		}
		if err := w.File(name, perm, data); err != nil {
			return err
		}
	}
	done := map[string]bool{}
	for _, mod := range m.Modules {
		deps, err := m.Kernel.ModuleDeps(mod)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if done[d] {
				continue
			}
			done[d] = true
			b, err := os.ReadFile(filepath.Join(m.Kernel.Modules, d))
			if err != nil {
				return err
			}
			if err := w.File("lib/modules/"+d, 0o644, b); err != nil {
				return err
			}
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

func (v *VM) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		v.mu.Lock()
		v.lines = append(v.lines, line)
		kept := v.waiters[:0]
		for _, w := range v.waiters {
			if strings.Contains(line, w.match) {
				w.ch <- line
				continue
			}
			kept = append(kept, w)
		}
		v.waiters = kept
		close(v.changed)
		v.changed = make(chan struct{})
		v.mu.Unlock()
	}
	v.err = v.cmd.Wait()
	close(v.done)
}

// Lines returns the console output so far.
func (v *VM) Lines() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

// WaitLine returns the first console line from now on that contains
// match, or an error when ctx ends or the machine exits first.
func (v *VM) WaitLine(ctx context.Context, match string) (string, error) {
	w := &waiter{match: match, ch: make(chan string, 1)}
	v.mu.Lock()
	v.waiters = append(v.waiters, w)
	v.mu.Unlock()
	select {
	case l := <-w.ch:
		return l, nil
	case <-v.done:
		select {
		case l := <-w.ch:
			return l, nil
		default:
		}
		return "", fmt.Errorf("vm: machine exited before printing %q", match)
	case <-ctx.Done():
		return "", fmt.Errorf("vm: waiting for %q: %w", match, ctx.Err())
	}
}

// Await returns the first console line at index from or later (counting
// from the first line of the boot) for which match is true, and the index
// after it, so that a test can wait for a sequence of events without
// missing one that came early. It fails when ctx ends or the machine exits
// first.
func (v *VM) Await(ctx context.Context, from int, match func(string) bool) (string, int, error) {
	for {
		v.mu.Lock()
		lines, changed := v.lines[min(from, len(v.lines)):], v.changed
		v.mu.Unlock()
		for i, l := range lines {
			if match(l) {
				return l, from + i + 1, nil
			}
		}
		from += len(lines)
		select {
		case <-changed:
		case <-v.done:
			if v.lineCount() > from {
				continue
			}
			return "", from, errors.New("vm: machine exited")
		case <-ctx.Done():
			return "", from, fmt.Errorf("vm: %w", ctx.Err())
		}
	}
}

func (v *VM) lineCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.lines)
}

// Wait waits for the machine to power off and returns QEMU's exit error.
func (v *VM) Wait(ctx context.Context) error {
	select {
	case <-v.done:
		return v.err
	case <-ctx.Done():
		v.cmd.Process.Kill()
		<-v.done
		return fmt.Errorf("vm: machine still running: %w", ctx.Err())
	}
}

// Results decodes every "RESULT <json>" console line into a value made by
// newResult, in order.
func Results[T any](v *VM) ([]T, error) {
	var out []T
	for _, l := range v.Lines() {
		_, js, ok := strings.Cut(l, "RESULT ")
		if !ok {
			continue
		}
		var r T
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			return out, fmt.Errorf("vm: decoding %q: %w", l, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// QMP connects to the machine's QMP socket.
func (v *VM) QMP() (*qmp.Conn, error) {
	return qmp.Dial(filepath.Join(v.dir, "qmp.sock"), 10*time.Second)
}

// ExitCode returns the guest program's exit status from the "INIT exit=N"
// line, or an error when /init did not print one.
func (v *VM) ExitCode() (int, error) {
	for _, l := range v.Lines() {
		if _, s, ok := strings.Cut(l, "INIT exit="); ok {
			var n int
			_, err := fmt.Sscan(s, &n)
			return n, err
		}
	}
	return -1, errors.New("vm: no INIT exit line on the console")
}

var (
	buildMu    sync.Mutex
	buildCache = map[string][]byte{}
)

// GuestBinary cross-compiles the main package pkg (relative to the module
// root, e.g. "./test/qemu/guest/wakeprobe") for linux/arm64, statically and
// stripped, once per test process.
func GuestBinary(t testing.TB, pkg string) []byte {
	return CrossBinary(t, pkg, "arm64", "")
}

// CrossBinary builds pkg for linux/goarch (goarm for arm) and returns it.
func CrossBinary(t testing.TB, pkg, goarch, goarm string) []byte {
	t.Helper()
	return crossBuild(t, pkg, goarch, goarm, "")
}

// StampedBinary is GuestBinary with the version stamp
// internal/version.stamp set to stamp, as scripts/packages.sh stamps a
// package's build: two stamps give two builds of one tree that report
// different versions.
func StampedBinary(t testing.TB, pkg, stamp string) []byte {
	t.Helper()
	return crossBuild(t, pkg, "arm64", "", stamp)
}

func crossBuild(t testing.TB, pkg, goarch, goarm, stamp string) []byte {
	t.Helper()
	key := pkg + " " + goarch + goarm + " " + stamp
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := buildCache[key]; ok {
		return b
	}
	out := filepath.Join(t.TempDir(), "bin")
	var tags []byte
	if strings.HasSuffix(pkg, "/cmd/torpor-agent") {
		// The agent's build tags, as scripts/cross.sh builds it.
		var err error
		if tags, err = os.ReadFile(filepath.Join(ModuleRoot(t), "scripts", "agent-tags")); err != nil {
			t.Fatal(err)
		}
	}
	ldflags := "-s -w"
	if stamp != "" {
		ldflags += " -X github.com/torpor-dev/torpor/internal/version.stamp=" + stamp
	}
	if goarch == "arm" { // segments on 4 KiB pages, as scripts/cross.sh builds them
		extra, err := os.ReadFile(filepath.Join(ModuleRoot(t), "scripts", "arm-ldflags"))
		if err != nil {
			t.Fatal(err)
		}
		ldflags += " " + strings.TrimSpace(string(extra))
	}
	cmd := exec.Command("go", "build", "-tags", strings.TrimSpace(string(tags)), "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Dir = ModuleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOARM="+goarm)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building %s for %s%s: %v\n%s", pkg, goarch, goarm, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	buildCache[key] = b
	return b
}

// ModuleRoot returns the directory of go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
