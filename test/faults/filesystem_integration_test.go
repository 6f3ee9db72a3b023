//go:build integration

package faults

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestDataDirRemoved: the relay's data directory is removed (rm -rf)
// while the relay runs. Writes into the removed files would vanish at the
// next start, so no send after it is answered queued: true: each gets 503
// store_unavailable, queued: false, and the relay logs an error naming the
// fix; the device can still read what was acknowledged before. (A
// directory removed as a whole, marker included, looks like a new
// installation at the next start: the error logged here is the record.)
func TestDataDirRemoved(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			f := newFixture(t, engine, filepath.Join(t.TempDir(), "relay"))
			r := f.start(t)
			relaytest.Publish(t, r.URL, f.dev, "sleep")
			f.sendN(t, r.URL, 30, 200)
			before := f.l.ackedCount()
			if err := os.RemoveAll(f.dir); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				a := f.l.send(r.URL, f.dev.DID(), f.sender, 200)
				if a.Err != nil || a.Queued || a.Status != http.StatusServiceUnavailable {
					t.Fatalf("send %d after the data directory was removed: status %d, queued %v, %v; want 503, not queued\n%s",
						i, a.Status, a.Queued, a.Err, r.Log())
				}
			}
			if n, err := relaytest.Count(r.URL, f.dev); err != nil || n != before {
				t.Errorf("the device reads %d records after the removal (%v), want the %d acknowledged before", n, err, before)
			}
			if !strings.Contains(r.Log(), "was removed while in use") || !strings.Contains(r.Log(), "--reinitialise") {
				t.Errorf("the relay's log does not say that its store was removed and what to do:\n%s", r.Log())
			}
		})
	}
}

// TestReadOnlyFileSystem: the data directory is on a loop-mounted ext4
// (errors=remount-ro) that the kernel turns read-only under the running
// relay (ext4's trigger_fs_error, as after an I/O error). Sends are
// refused, never answered queued: true and lost; /metrics and the
// device's reads go on; the relay logs the error with the fix. The
// operator's fix — stop, fsck, mount read-write, start — brings back
// every acknowledged message, and none answered not queued is delivered.
func TestReadOnlyFileSystem(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			fs := newExt4(t)
			f := newFixture(t, engine, filepath.Join(fs.dir, "relay"))
			r := f.start(t)
			relaytest.Publish(t, r.URL, f.dev, "sleep")
			f.sendN(t, r.URL, 40, 500)
			fs.fail(t)
			refused := 0
			for i := range 40 {
				switch a := f.l.send(r.URL, f.dev.DID(), f.sender, 500); {
				case a.Err != nil:
					t.Fatalf("send %d on the read-only file system: %v (the relay died?)\n%s", i, a.Err, r.Log())
				case !a.Queued:
					refused++
				}
			}
			if refused == 0 {
				t.Fatalf("40 sends on a read-only file system, none refused")
			}
			whileFull(t, f, r)
			if !strings.Contains(r.Log(), "read-only") || !strings.Contains(r.Log(), "fsck") {
				t.Errorf("the relay's log does not say its file system is read-only and what to do:\n%s", r.Log())
			}
			r.Stop() // it may exit with an error: its files are read-only
			fs.repair(t)
			r = f.start(t)
			if err := f.l.drain(r.URL, f.dev); err != nil {
				t.Fatalf("drain after the repair: %v\n%s", err, r.Log())
			}
			f.l.check(t, engine+" after the file system went read-only", false)
		})
	}
}

// ext4 is a 64 MiB ext4 image loop-mounted for one test.
type ext4 struct{ img, dir string }

// newExt4 makes and mounts it (errors=remount-ro); it needs root, mkfs.ext4
// and loop devices, and is unmounted when the test ends.
func newExt4(t *testing.T) *ext4 {
	t.Helper()
	testenv.RequireRoot(t)
	mkfs := testenv.RequireTool(t, "mkfs.ext4")
	testenv.RequireTool(t, "e2fsck")
	base := t.TempDir()
	fs := &ext4{img: filepath.Join(base, "fs.img"), dir: filepath.Join(base, "mnt")}
	if err := os.Mkdir(fs.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fs.img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(fs.img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", fs.img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	fs.mount(t)
	t.Cleanup(func() { exec.Command("umount", fs.dir).Run() }) // after the relay's cleanup killed it
	return fs
}

func (fs *ext4) mount(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", fs.img, fs.dir).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot loop-mount an ext4 image: "+err.Error()+": "+string(out))
	}
}

// fail makes the kernel turn the file system read-only, as an I/O error
// does with errors=remount-ro.
func (fs *ext4) fail(t *testing.T) {
	t.Helper()
	out, err := exec.Command("findmnt", "-n", "-o", "SOURCE", fs.dir).Output()
	if err != nil {
		t.Fatalf("findmnt %s: %v", fs.dir, err)
	}
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(strings.TrimSpace(string(out))), "trigger_fs_error")
	if err := os.WriteFile(trigger, []byte("torpor test/faults\n"), 0o200); err != nil {
		testenv.Unavailable(t, "cannot trigger an ext4 error ("+trigger+"): "+err.Error())
	}
	if err := os.WriteFile(filepath.Join(fs.dir, "probe"), nil, 0o600); err == nil {
		t.Fatal("the file system still takes writes after the error")
	}
}

// repair is the operator's fix: unmount, fsck, mount read-write again.
func (fs *ext4) repair(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("umount", fs.dir).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	// e2fsck exits 1 when it corrected something (the error flag).
	if out, err := exec.Command("e2fsck", "-f", "-y", fs.img).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck: %v\n%s", err, out)
		}
	}
	fs.mount(t)
}
