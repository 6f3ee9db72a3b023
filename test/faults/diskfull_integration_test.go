//go:build integration

package faults

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestDiskFull: the relay's data directory is a 16 MiB tmpfs that a
// filler file fills up to 2 MiB while the relay runs. Sends are
// answered queued: true until the disk is full, then refused (not
// queued), never acknowledged and lost; /metrics and the device's reads
// keep working; once the filler is deleted sends are queued again
// without a restart, and every acknowledged message is delivered.
func TestDiskFull(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			dir := smallFS(t, "16m")
			f := newFixture(t, engine, dir)
			r := f.start(t)
			relaytest.Publish(t, r.URL, f.dev, "sleep")
			filler := filepath.Join(dir, "filler")
			fill(t, filler, 2<<20)
			refused := 0
			for i := 0; refused < 20; i++ {
				if i == 2000 {
					t.Fatalf("2000 sends of 8 KiB into 2 MiB, %d refused; want the disk full", refused)
				}
				a := f.l.send(r.URL, f.dev.DID(), f.sender, 8<<10)
				switch {
				case a.Err != nil:
					t.Fatalf("send %d while the disk fills: %v (the relay died?)\n%s", i, a.Err, r.Log())
				case a.Queued:
					refused = 0
				case a.Status != http.StatusServiceUnavailable && a.Status != http.StatusInsufficientStorage:
					t.Fatalf("send %d while the disk fills: status %d, want 503 or 507 (not queued)", i, a.Status)
				default:
					refused++
				}
			}
			t.Logf("disk full after %d acknowledged sends", f.l.ackedCount())
			whileFull(t, f, r)
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			for i := range 20 { // space is back: every send is queued, no restart
				if a := f.l.send(r.URL, f.dev.DID(), f.sender, 8<<10); !a.Queued {
					t.Fatalf("send %d after space returned: status %d, %v; want queued\n%s", i, a.Status, a.Err, r.Log())
				}
			}
			if err := f.l.drain(r.URL, f.dev); err != nil {
				t.Fatalf("drain after the disk was full: %v\n%s", err, r.Log())
			}
			f.l.check(t, engine+" after the disk was full", false)
		})
	}
}

// whileFull checks that a relay whose disk is full still serves /metrics
// and the device's reads: every message acknowledged so far.
func whileFull(t *testing.T, f *fixture, r *relaytest.Relay) {
	t.Helper()
	resp, err := http.Get(r.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics while the disk is full: %d", resp.StatusCode)
	}
	if n, err := relaytest.Count(r.URL, f.dev); err != nil || n < f.l.ackedCount() {
		t.Errorf("the device reads %d records while the disk is full (%v), want the %d acknowledged", n, err, f.l.ackedCount())
	}
}

// smallFS mounts a tmpfs of size (mount's size=) on a new directory for
// the test and unmounts it at its end. It needs root: without it, or
// when the kernel refuses the mount, the test is skipped (a failure when
// CI=true or TORPOR_REQUIRE_TOOLS=1).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot mount a tmpfs: "+err.Error()+": "+string(out))
	}
	t.Cleanup(func() { // after the relay's own cleanup killed it (cleanups run last first)
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes the file at path until its file system is full, then cuts
// it so that free bytes are free.
func fill(t *testing.T, path string, free int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for {
		m, err := fh.Write(chunk)
		n += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < free {
		t.Fatalf("the file system had only %d bytes free", n)
	}
	if err := fh.Truncate(n - free); err != nil {
		t.Fatal(err)
	}
}
