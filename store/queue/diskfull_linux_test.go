package queue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// smallFS mounts a tmpfs of size bytes and returns its path. It needs
// root; without it the test is skipped, except in CI (CI=true), where a
// test that cannot run fails.
func smallFS(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting a %d-byte tmpfs (run the tests as root in CI): %v", size, err)
		}
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// TestLogDiskFull fills a small real file system: enqueues then fail
// with ENOSPC (the relay answers 503 store_unavailable), while Next,
// Stats and acknowledgements go on working; once space comes back,
// enqueues succeed again without a restart; after a restart the log holds
// exactly the records whose enqueue succeeded and were not acknowledged.
func TestLogDiskFull(t *testing.T) {
	fs := smallFS(t, 2<<20)
	filler := filepath.Join(fs, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(fs, "log")
	o := &LogOptions{ZeroAhead: 128 << 10}
	l := openLog(t, dir, o)
	defer func() { l.Close() }()
	b := queuebounds.Bounds{MaxMessages: 1 << 20, MaxPerPeer: 1 << 20, MaxBytes: 1 << 40, MaxPeerBytes: 1 << 40, MaxMessageSize: 1 << 20, TTL: 1 << 50}
	body := string(make([]byte, 4<<10))
	var stored []uint64
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		var r Record
		if r, err = l.Enqueue(bgc, msg(alice, body), b, t0); err == nil {
			stored = append(stored, r.Seq)
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("enqueue on a full file system: %v, want ENOSPC", err)
	}
	if _, err := l.Enqueue(bgc, msg(alice, body), b, t0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("enqueue again: %v, want ENOSPC", err)
	}
	if st, err := l.Stats(bgc, agent, t0); err != nil || st.Messages != len(stored) {
		t.Fatalf("Stats on a full file system = %+v, %v; want %d records", st, err, len(stored))
	}
	rs, err := l.Next(bgc, agent, 0, 1<<20, t0)
	if err != nil || len(rs) != len(stored) {
		t.Fatalf("Next on a full file system: %d records, %v; want %d", len(rs), err, len(stored))
	}
	acked := len(stored) / 2 / 10 * 10
	for i := 0; i < acked; i += 10 {
		if err := l.Ack(bgc, agent, stored[i:i+10]); err != nil {
			t.Fatalf("ack on a full file system: %v", err)
		}
	}
	left := stored[acked:]
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r, err := l.Enqueue(bgc, msg(alice, "space came back"), b, t0)
	if err != nil {
		t.Fatalf("enqueue once space came back: %v", err)
	}
	left = append(left, r.Seq)
	checkLogIndex(t, l)
	l.Close()
	l = openLog(t, dir, o)
	if got := liveSeqs(t, l, agent, t0); fmt.Sprint(got) != fmt.Sprint(left) {
		t.Errorf("after a restart: %v, want %v", got, left)
	}
}
