// Command init is the /init of the QEMU system tests' initramfs: a
// generic, busybox-free PID 1 that runs one guest program and powers the
// machine off.
//
// It mounts devtmpfs, proc, sysfs and tmpfs, loads the kernel modules the
// kernel command line names, brings up the network, runs the program with
// its arguments, prints "INIT exit=N" on the console and powers off (QEMU,
// started with -no-reboot, then exits). Everything comes from the kernel
// command line, so one initramfs serves every test:
//
//	torpor.modules=a.ko,b.ko   modules under /lib/modules, loaded in order
//	torpor.net=10.0.2.15/24    address for eth0 (QEMU user networking: the
//	                           host is 10.0.2.2, on link)
//	torpor.mount=DEV:DIR:FS    mount the block device DEV (waiting up to
//	                           10s for it to appear) on DIR with file
//	                           system FS after the modules are loaded;
//	                           repeat for more, in order
//	torpor.run=/bin/prog       the program to run
//	torpor.arg=VALUE           one argument; repeat for more, in order
//	torpor.env=KEY=VALUE       one environment variable; repeat for more
//	torpor.write=PATH=VALUE    write VALUE to the file PATH (a sysctl or
//	                           sysfs attribute) before the program runs;
//	                           repeat for more, in order
//	torpor.timesync=URL        with torpor.net: set the system clock from
//	                           the host's, which URL serves (package
//	                           test/qemu/timesync), and print the offset
//	                           before and after on the console
//	torpor.clockstep=-1h       step the system clock by this duration
//	                           (time.ParseDuration) before the program
//	                           runs, as fake-hwclock sets the time saved
//	                           at shutdown on a board without an RTC
//
// Values may be double-quoted to hold spaces. The program's output goes to
// the console (ttyAMA0), where the host reads it; by convention tests print
// "RESULT <json>" lines.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/test/qemu/timesync"
	"golang.org/x/sys/unix"
)

func main() {
	if os.Getpid() != 1 {
		// Never mount, load modules or power off a machine it was not
		// booted on.
		fmt.Fprintln(os.Stderr, "init: not PID 1; this is the QEMU test guest's /init")
		os.Exit(2)
	}
	code := run()
	fmt.Printf("INIT exit=%d\n", code)
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("INIT poweroff:", err)
	}
	select {} // PID 1 must not exit
}

func run() int {
	if err := mountAll(); err != nil {
		fmt.Println("INIT error:", err)
		return 125
	}
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		fmt.Println("INIT error:", err)
		return 125
	}
	p, err := parseCmdline(string(b))
	if err != nil {
		fmt.Println("INIT error:", err)
		return 125
	}
	if err := prepare(p); err != nil {
		fmt.Println("INIT error:", err)
		return 125
	}
	if p.run == "" {
		fmt.Println("INIT error: no torpor.run= on the kernel command line")
		return 125
	}
	cmd := exec.Command(p.run, p.args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stdout
	cmd.Env = append([]string{"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp", "TORPOR_GUEST=1"}, p.env...)
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Println("INIT error:", err)
		return 126
	}
	return 0
}

// prepare loads modules, mounts disks, brings up the network, writes
// what the command line asks for, sets the clock from the host's and steps
// it, in that order.
func prepare(p params) error {
	for _, m := range p.modules {
		if err := loadModule("/lib/modules/" + m); err != nil {
			return err
		}
	}
	for _, m := range p.mounts {
		if err := mountDisk(m); err != nil {
			return err
		}
	}
	if p.net != "" {
		if err := setupNet("eth0", p.net); err != nil {
			return err
		}
	}
	for _, w := range p.writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
			return err
		}
	}
	if p.timeSync != "" {
		if err := syncClock(p.timeSync); err != nil {
			return err
		}
	}
	if p.clockStep != 0 {
		tv := unix.NsecToTimeval(time.Now().Add(p.clockStep).UnixNano())
		if err := unix.Settimeofday(&tv); err != nil {
			return fmt.Errorf("stepping the clock: %w", err)
		}
		fmt.Printf("INIT clock stepped by %v to %s\n", p.clockStep, time.Now().UTC().Format(time.RFC3339))
	}
	return nil
}

// syncClock sets the system clock from the host's time server at url: the
// PL031 RTC the kernel read it from counts whole seconds.
func syncClock(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, after, err := timesync.Sync(ctx, url, 10, func(t time.Time) error {
		ts := unix.NsecToTimespec(t.UnixNano())
		return unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
	})
	if err != nil {
		return err
	}
	fmt.Printf("INIT clock set from the host: offset %v before, %v after\n", before, after)
	return nil
}

func mountAll() error {
	for _, m := range []struct{ src, dst, fs string }{
		{"devtmpfs", "/dev", "devtmpfs"},
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"tmpfs", "/tmp", "tmpfs"},
	} {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dst, m.fs, 0, ""); err != nil && err != syscall.EBUSY {
			return fmt.Errorf("mounting %s on %s: %w", m.fs, m.dst, err)
		}
	}
	return nil
}

// mountDisk mounts m (device, directory, file system), waiting for the
// device node: a block driver probes its devices after its module loaded.
// Mounting an ext4 file system replays its journal, as after a power cut.
func mountDisk(m [3]string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(m[0]); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("mount: %w", err)
		}
		time.Sleep(20 * time.Millisecond) // a device probe, in real time
	}
	if err := os.MkdirAll(m[1], 0o755); err != nil {
		return err
	}
	if err := unix.Mount(m[0], m[1], m[2], 0, ""); err != nil {
		return fmt.Errorf("mounting %s on %s (%s): %w", m[0], m[1], m[2], err)
	}
	return nil
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && err != unix.EEXIST {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	return nil
}

type params struct {
	modules []string
	mounts  [][3]string // device, directory, file system
	net     string
	run     string
	args    []string
	env     []string
	writes  [][2]string // path, value
	// clockStep is how far to step the system clock before the program.
	clockStep time.Duration
	timeSync  string // the host's time server
}

// parseCmdline picks the torpor.* parameters out of the kernel command
// line, honouring double quotes as the kernel does (lib/cmdline.c).
func parseCmdline(s string) (params, error) {
	var p params
	for _, w := range splitCmdline(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || !strings.HasPrefix(k, "torpor.") {
			continue
		}
		switch k {
		case "torpor.modules":
			for _, m := range strings.Split(v, ",") {
				if m != "" {
					p.modules = append(p.modules, m)
				}
			}
		case "torpor.net":
			p.net = v
		case "torpor.mount":
			m := strings.SplitN(v, ":", 3)
			if len(m) != 3 || !strings.HasPrefix(m[0], "/dev/") || !strings.HasPrefix(m[1], "/") || m[2] == "" {
				return p, fmt.Errorf("torpor.mount=%q: want /dev/DEV:/DIR:FSTYPE", v)
			}
			p.mounts = append(p.mounts, [3]string{m[0], m[1], m[2]})
		case "torpor.run":
			p.run = v
		case "torpor.arg":
			p.args = append(p.args, v)
		case "torpor.env":
			p.env = append(p.env, v)
		case "torpor.write":
			path, val, ok := strings.Cut(v, "=")
			if !ok || !strings.HasPrefix(path, "/") {
				return p, fmt.Errorf("torpor.write=%q: want /PATH=VALUE", v)
			}
			p.writes = append(p.writes, [2]string{path, val})
		case "torpor.timesync":
			p.timeSync = v
		case "torpor.clockstep":
			d, err := time.ParseDuration(v)
			if err != nil {
				return p, fmt.Errorf("torpor.clockstep=%q: %w", v, err)
			}
			p.clockStep = d
		default:
			return p, fmt.Errorf("unknown parameter %s", k)
		}
	}
	return p, nil
}

func splitCmdline(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case (r == ' ' || r == '\n' || r == '\t') && !quoted:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
