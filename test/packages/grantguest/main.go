// Command grantguest runs inside the QEMU guest of test/packages (as the
// program of test/qemu/guest/init): it shows that the torpor-agent
// package's grants let an unprivileged user sleep and wake the machine.
//
//	grantguest -tmpfiles FILE -rules FILE -uid N -gid N -- PROGRAM ARGS...
//
// It runs PROGRAM (wakeprobe, which sleeps through wake/rtc as the agent
// does) as uid and gid N with no supplementary groups and no capabilities,
// once before the grants, when it must fail, then applies the packaged
// tmpfiles.d "z" lines and the packaged udev rule's RUN commands for each
// RTC, as systemd-tmpfiles and udev do at boot, and runs it again. The
// names the files use are mapped to ids: root is 0, torpor-agent is N.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	tmpfiles := flag.String("tmpfiles", "", "The packaged tmpfiles.d file.")
	rules := flag.String("rules", "", "The packaged udev rules file.")
	uid := flag.Int("uid", 998, "The unprivileged user id.")
	gid := flag.Int("gid", 998, "The unprivileged group id, standing for torpor-agent.")
	flag.Parse()
	if os.Getenv("TORPOR_GUEST") != "1" || flag.NArg() == 0 {
		// It changes sysfs permissions: only inside the test guest.
		fmt.Fprintln(os.Stderr, "grantguest: run only in the QEMU test guest, with a program")
		os.Exit(2)
	}
	ids := map[string]int{"root": 0, "torpor-agent": *gid}
	code := runAs(*uid, *gid, flag.Args())
	fmt.Printf("GRANTGUEST before exit=%d\n", code)
	if err := applyTmpfiles(*tmpfiles, ids); err != nil {
		fail(err)
	}
	if err := applyRules(*rules, ids); err != nil {
		fail(err)
	}
	code = runAs(*uid, *gid, flag.Args())
	fmt.Printf("GRANTGUEST after exit=%d\n", code)
}

func fail(err error) {
	fmt.Printf("GRANTGUEST error %v\n", err)
	os.Exit(1)
}

// runAs runs argv as uid and gid; a process leaving uid 0 for another
// loses every capability.
func runAs(uid, gid int, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fail(err)
	}
	return 0
}

// applyTmpfiles applies the "z" lines: mode, then owner and group.
func applyTmpfiles(name string, ids map[string]int) error {
	lines, err := readLines(name)
	if err != nil {
		return err
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 5 || f[0] != "z" {
			continue
		}
		mode, err := strconv.ParseUint(f[2], 8, 32)
		if err != nil {
			return fmt.Errorf("%s: mode %q", name, f[2])
		}
		u, okU := ids[f[3]]
		g, okG := ids[f[4]]
		if !okU || !okG {
			return fmt.Errorf("%s: unknown user or group in %q", name, l)
		}
		if err := os.Chmod(f[1], os.FileMode(mode)); err != nil {
			return err
		}
		if err := os.Lchown(f[1], u, g); err != nil {
			return err
		}
		fmt.Printf("GRANTGUEST tmpfiles z %s %o %d:%d\n", f[1], mode, u, g)
	}
	return nil
}

var runRE = regexp.MustCompile(`RUN\+="([^"]+)"`)

// applyRules runs, for every RTC that has a wakealarm, the RUN commands of
// the rules matching SUBSYSTEM=="rtc" with %S and %p substituted; it
// knows the two commands the rule uses, chgrp and chmod g+w.
func applyRules(name string, ids map[string]int) error {
	lines, err := readLines(name)
	if err != nil {
		return err
	}
	devs, _ := filepath.Glob("/sys/class/rtc/rtc*")
	for _, l := range lines {
		if !strings.Contains(l, `SUBSYSTEM=="rtc"`) || !strings.Contains(l, `TEST=="wakealarm"`) {
			continue
		}
		for _, d := range devs {
			real, err := filepath.EvalSymlinks(d)
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(real, "wakealarm")); err != nil {
				continue
			}
			for _, m := range runRE.FindAllStringSubmatch(l, -1) {
				c := strings.NewReplacer("%S", "/sys", "%p", strings.TrimPrefix(real, "/sys")).Replace(m[1])
				if err := runCommand(c, ids); err != nil {
					return fmt.Errorf("%s: %s: %w", name, c, err)
				}
				fmt.Printf("GRANTGUEST udev %s\n", c)
			}
		}
	}
	return nil
}

func runCommand(c string, ids map[string]int) error {
	f := strings.Fields(c)
	switch {
	case len(f) == 3 && filepath.Base(f[0]) == "chgrp":
		g, ok := ids[f[1]]
		if !ok {
			return fmt.Errorf("unknown group %q", f[1])
		}
		return os.Lchown(f[2], -1, g)
	case len(f) == 3 && filepath.Base(f[0]) == "chmod" && f[1] == "g+w":
		fi, err := os.Stat(f[2])
		if err != nil {
			return err
		}
		return os.Chmod(f[2], fi.Mode().Perm()|0o020)
	}
	return errors.New("unsupported command")
}

func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && l[0] != '#' {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
