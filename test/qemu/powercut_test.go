//go:build integration

package qemu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// powerCutTrials is the number of power cuts of each test.
const powerCutTrials = 20

// newDisk makes a raw image of size bytes with an ext4 file system on
// it, made on the host (mkfs.ext4 from e2fsprogs, no root needed).
func newDisk(t *testing.T, size int64) string {
	t.Helper()
	mkfs := "/usr/sbin/mkfs.ext4" // not on a normal user's PATH
	if _, err := os.Stat(mkfs); err != nil {
		mkfs = testenv.RequireTool(t, "mkfs.ext4")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(mkfs, "-q", "-F", "-L", "torpor", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	return img
}

// diskModules are the guest's modules for Machine.Disk and an ext4 mount
// (ext4 finds crc32c through the crypto API, not as a module dependency).
var diskModules = []string{"virtio_mmio", "virtio_blk", "crc32c_generic", "ext4"}

// cutState is what the host has read on the consoles of the boots so far.
type cutState struct {
	idOf      map[uint64]string // seq -> object id, from QUEUED lines: answered queued
	delivered map[string]int    // object id -> DELIVERED lines
	lost      int               // notifications the recoveries reported dropped
}

// TestPowerCut cuts the guest's power (QMP quit) 20 times at a random
// moment while the relay's queue store takes records from 4 concurrent
// senders and the agent's pipeline drains them, both on an ext4 file
// system on a virtio disk with cache=none (test/qemu/guest/powercut).
// After every reboot, every record answered queued before is still
// queued or was committed by the agent (notified, or among the
// notifications its at-most-once recovery reports dropped); no seq is
// reused for another object; and no object is notified twice, ever. A
// last boot drains the queue to its end: every object answered queued was
// notified once, or reported dropped.
func TestPowerCut(t *testing.T) {
	k := vm.FindKernel(t)
	m := vm.Machine{Kernel: k, Files: map[string][]byte{"bin/powercut": vm.GuestBinary(t, "./test/qemu/guest/powercut")},
		Modules: diskModules, Disk: newDisk(t, 128<<20), Mounts: []string{"/dev/vda:/data:ext4"}, Run: "/bin/powercut"}
	m.Initrd = m.WriteInitramfs(t) // the same for every boot; the arguments are on the command line
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 16))
	st := &cutState{idOf: map[uint64]string{}, delivered: map[string]int{}}
	start := time.Now()
	for boot := 0; boot < powerCutTrials; boot++ {
		m.Args = []string{"-dir", "/data", "-boot", fmt.Sprint(boot)}
		v := vm.Start(t, m)
		ready := st.awaitReady(t, v, boot)
		// A random moment from the start of the load to 3 s into it.
		cut := time.Duration(rng.IntN(3000)) * time.Millisecond
		<-time.After(cut)
		q, err := v.QMP()
		if err != nil {
			t.Fatal(err)
		}
		q.Execute("quit", nil) // QEMU exits at once: the answer may not come
		q.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = v.Wait(ctx)
		cancel()
		queued, delivered := st.collect(t, v.Lines()[ready:])
		t.Logf("boot %d: power cut %v after READY: %d answered queued, %d notified", boot, cut, queued, delivered)
		if t.Failed() {
			t.Fatalf("seed %d, boot %d: QEMU %v", seed, boot, err)
		}
	}
	m.Args = []string{"-dir", "/data", "-boot", fmt.Sprint(powerCutTrials), "-final"}
	v := vm.Start(t, m)
	ready := st.awaitReady(t, v, powerCutTrials)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := v.WaitLine(ctx, "DONE"); err != nil {
		t.Fatalf("the last boot did not drain to the end: %v", err)
	}
	v.Wait(ctx)
	st.collect(t, v.Lines()[ready:])
	st.checkFinal(t)
	t.Logf("seed %d: %d power cuts and a last boot in %v: %d objects answered queued, %d notified, %d notifications reported dropped",
		seed, powerCutTrials, time.Since(start).Round(time.Second), len(st.idOf), len(st.delivered), st.lost)
}

// awaitReady waits for the guest's READY and checks the boot's RECOVERED
// and PRESENT lines against what was answered queued before; it returns
// the index of the console line after READY.
func (st *cutState) awaitReady(t *testing.T, v *vm.VM, boot int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, ready, err := v.Await(ctx, 0, func(l string) bool { return l == "READY" || strings.Contains(l, "ERROR") })
	if err != nil || l != "READY" {
		t.Fatalf("boot %d: %q, %v; want READY", boot, l, err)
	}
	present := map[uint64]bool{}
	for _, l := range v.Lines()[:ready] {
		var n int
		var seq uint64
		if _, err := fmt.Sscanf(l, "RECOVERED lost=%d", &n); err == nil {
			st.lost += n
		} else if _, err := fmt.Sscanf(l, "PRESENT %d", &seq); err == nil {
			present[seq] = true
		}
	}
	missing := 0
	for seq, id := range st.idOf {
		if !present[seq] && st.delivered[id] == 0 {
			missing++ // committed by the agent, its notification dropped
		}
	}
	if missing > st.lost {
		t.Fatalf("boot %d: %d records answered queued are neither queued nor notified, but the agent reported only %d notifications dropped", boot, missing, st.lost)
	}
	return ready
}

// collect reads a boot's QUEUED and DELIVERED lines, failing the test on
// a seq reused for another object, an object notified twice or an ERROR
// line; it returns how many of each it read.
func (st *cutState) collect(t *testing.T, lines []string) (queued, delivered int) {
	t.Helper()
	for _, l := range lines {
		var seq uint64
		var id string
		switch {
		case strings.Contains(l, "ERROR"):
			t.Errorf("guest: %s", l)
		case strings.HasPrefix(l, "QUEUED "):
			if _, err := fmt.Sscanf(l, "QUEUED %d %s", &seq, &id); err != nil {
				continue // cut off mid-line
			}
			if prev, ok := st.idOf[seq]; ok && prev != id {
				t.Errorf("seq %d was answered queued for %s and again for %s", seq, prev, id)
			}
			st.idOf[seq] = id
			queued++
		case strings.HasPrefix(l, "DELIVERED "):
			id = strings.TrimPrefix(l, "DELIVERED ")
			if st.delivered[id]++; st.delivered[id] > 1 {
				t.Errorf("%s notified %d times", id, st.delivered[id])
			}
			delivered++
		}
	}
	return queued, delivered
}

// checkFinal: after the last drain every object answered queued was
// notified once or is among the notifications reported dropped.
func (st *cutState) checkFinal(t *testing.T) {
	t.Helper()
	dropped := 0
	for _, id := range st.idOf {
		if st.delivered[id] == 0 {
			dropped++
		}
	}
	if dropped > st.lost {
		t.Errorf("%d objects answered queued were never notified, but the agent reported %d notifications dropped", dropped, st.lost)
	}
}
