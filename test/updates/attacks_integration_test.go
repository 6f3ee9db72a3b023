//go:build integration

package updates

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// attackWorld is a world whose relay keeps its address across restarts,
// so that its repository can be changed while it is stopped.
type attackWorld struct{ *world }

func newAttackWorld(t *testing.T) *attackWorld {
	return &attackWorld{newWorld(t, "--listen", testenv.FreeAddr(t))}
}

// publish signs data as target name at version for this machine's
// architecture and publishes the owner's targets (args: --root 1 the
// first time); it returns the SHA-256 of data in hex.
func (w *attackWorld) publish(t *testing.T, name string, version int, data []byte, args ...string) string {
	t.Helper()
	file := filepath.Join(w.dir, "build")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", name, "--version", strconv.Itoa(version),
		"--goarch", goruntime.GOARCH, "--goarm", "", file)
	ctl(t, append([]string{"update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey}, args...)...)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// device starts an always_on agent named name at version 1: its boot
// wake checks for updates and publishes the status it signed with the
// outcome at once (runtime updatecheck.go); while it stays up it checks
// again only when a rollout offers it a target (none here), so each start
// makes one check.
func (w *attackWorld) device(t *testing.T, name string) (*testenv.Proc, string) {
	return w.agent(t, name, 1, 1<<20)
}

// tamper puts value under key in bucket of the stopped relay's updates.db
// (store/updaterepo's bbolt file: buckets "meta", metadata by file name,
// and "blobs", targets by SHA-256; backend.go), as someone with the
// relay's disk would. The key must be there already: a repository laid
// out otherwise fails the test rather than leaving it untouched.
func tamper(t *testing.T, db, bucket, key string, value []byte) {
	t.Helper()
	d, err := bolt.Open(db, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil || b.Get([]byte(key)) == nil {
			return fmt.Errorf("%s holds no %s %q", db, bucket, key)
		}
		return b.Put([]byte(key), value)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var checkedBytes = regexp.MustCompile(` bytes=(\d+)$`)

// firstCheck waits for the agent's first update check and fails the test
// unless its line contains every one of want; it returns the bytes of the
// target the check fetched.
func firstCheck(t *testing.T, agent *testenv.Proc, want ...string) int {
	t.Helper()
	line := agent.Next(t, 1, `msg="update check"`)[0]
	t.Logf("the agent: %s", line)
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Fatalf("the agent's update check says\n%s\nwant %q", line, w)
		}
	}
	m := checkedBytes.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the agent's update check says no bytes:\n%s", line)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// awaitFleetUpdate returns the update outcome in the signed status the
// relay keeps for the agent named name (torporctl fleet --json, the
// relay's fleet API) once its outcome is outcome; a minute without fails
// the test.
func (w *attackWorld) awaitFleetUpdate(t *testing.T, name, outcome string, agent *testenv.Proc) wire.StatusUpdate {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for {
		var fleet struct {
			Devices []struct {
				Name   string             `json:"name"`
				Update *wire.StatusUpdate `json:"update"`
			} `json:"devices"`
		}
		out := ctl(t, "fleet", "--relay", w.relay.URL, "--key", w.opKey, "--json")
		if err := json.Unmarshal([]byte(out), &fleet); err != nil {
			t.Fatalf("torporctl fleet --json: %v\n%s", err, out)
		}
		for _, d := range fleet.Devices {
			if d.Name == name && d.Update != nil && d.Update.Outcome == outcome {
				return *d.Update
			}
		}
		if time.Now().After(limit) {
			t.Fatalf("no %s update for %s in the fleet API after a minute:\n%s\nthe agent:\n%s", outcome, name, out, agent.Log())
		}
		time.Sleep(200 * time.Millisecond) // polling the relay, not waiting for the agent's time
	}
}

// checkNothingKept fails the test if the agent's update directory holds a
// verified file or a partial download.
func checkNothingKept(t *testing.T, dir string) {
	t.Helper()
	for _, sub := range []string{"verified", "part"} {
		entries, err := os.ReadDir(filepath.Join(dir, "update", sub))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("the agent kept update/%s/%s", sub, e.Name())
		}
	}
}

// TestMixAndMatchThroughTheRelay: the owner publishes app/2, then app/3.
// The stopped relay's repository is made to serve, under the name its
// current snapshot gives the targets metadata (M.targets.json, consistent
// snapshots), the targets of the publish before: signed by the owner's
// targets key, listing app/2 alone, but not the file that snapshot names
// (TUF specification Section 5.6.2). A new agent at version 1, which
// would take app/2 from them, refuses them as mix-and-match, says so in
// the status it signs (read through the relay's fleet API), and fetches
// and keeps nothing.
func TestMixAndMatchThroughTheRelay(t *testing.T) {
	w := newAttackWorld(t)
	w.publish(t, "app/2", 2, []byte("build 2"), "--root", "1")
	older, err := os.ReadFile(filepath.Join(w.owner, "targets.json"))
	if err != nil {
		t.Fatal(err)
	}
	w.publish(t, "app/3", 3, []byte("build 3"))
	var current struct {
		Signed struct {
			Version int64 `json:"version"`
		} `json:"signed"`
	}
	b, err := os.ReadFile(filepath.Join(w.owner, "targets.json"))
	if err == nil {
		err = json.Unmarshal(b, &current)
	}
	if err != nil || bytes.Equal(b, older) {
		t.Fatalf("the owner's targets after the second publish: %v", err)
	}
	db := filepath.Join(w.dir, "relay", "updates.db")
	w.restartRelay(t, func() { tamper(t, db, "meta", fmt.Sprintf("%d.targets.json", current.Signed.Version), older) })

	agent, dir := w.device(t, "plot-1")
	firstCheck(t, agent, "outcome=refused", "reason=mix-and-match", "targets is not the one the role above names")
	checkNothingKept(t, dir)
	u := w.awaitFleetUpdate(t, "plot-1", "refused", agent)
	if u.Reason != "mix-and-match" || !strings.Contains(u.Detail, "targets") {
		t.Errorf("the signed status's update: %+v; want refused, mix-and-match", u)
	}
	if agent.Count(updateCheck, "outcome=verified") > 0 {
		t.Errorf("the agent verified a target:\n%s", agent.Log())
	}
}

// endlessLen is the target's signed length in TestEndlessDataThroughTheRelay,
// extra the bytes the relay's blob holds beyond it.
const endlessLen, extra = 100_000, 4 << 20

// TestEndlessDataThroughTheRelay: the stopped relay's blob of a published
// 100,000-byte target is replaced, under the target's SHA-256, by 4 MiB
// more of other bytes: a relay serving more than the signed length (TUF
// specification Section 5.7.3). The agent asks for no byte past the
// length (its check fetched exactly 100,000 bytes, its wake received
// less than 16 KiB more), finds them not the target, refuses them as
// bad-target, says so in its signed status and keeps no file, verified
// or partial. Then the blob becomes the target with the 4 MiB appended:
// the agent again reads the signed length alone, which is the owner's
// target, and verifies it.
func TestEndlessDataThroughTheRelay(t *testing.T) {
	w := newAttackWorld(t)
	data := make([]byte, endlessLen)
	rand.Read(data)
	sum := w.publish(t, "app/2", 2, data, "--root", "1")
	endless := make([]byte, endlessLen+extra)
	rand.Read(endless)
	db := filepath.Join(w.dir, "relay", "updates.db")
	w.restartRelay(t, func() { tamper(t, db, "blobs", sum, endless) })

	agent, dir := w.device(t, "plot-1")
	if n := firstCheck(t, agent, "outcome=refused", "reason=bad-target", "the download is not the target"); n != endlessLen {
		t.Errorf("the check fetched %d bytes; want the signed length %d", n, endlessLen)
	}
	checkNothingKept(t, dir)
	u := w.awaitFleetUpdate(t, "plot-1", "refused", agent)
	if u.Reason != "bad-target" || u.Bytes != endlessLen {
		t.Errorf("the signed status's update: %+v; want refused, bad-target, %d bytes", u, endlessLen)
	}
	stopAndCheckReceived(t, agent)

	w.restartRelay(t, func() { tamper(t, db, "blobs", sum, append(append([]byte(nil), data...), endless[:extra]...)) })
	again, _ := w.device(t, "plot-1")
	if n := firstCheck(t, again, "outcome=verified", "target=app/2"); n != endlessLen {
		t.Errorf("the check fetched %d bytes; want the signed length %d", n, endlessLen)
	}
	got, err := os.ReadFile(filepath.Join(dir, "update", "verified", sum))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the verified file: %d bytes, %v; want the %d signed", len(got), err, endlessLen)
	}
	if u := w.awaitFleetUpdate(t, "plot-1", "verified", again); u.Bytes != endlessLen {
		t.Errorf("the signed status's update: %+v; want verified, %d bytes", u, endlessLen)
	}
	stopAndCheckReceived(t, again)
}

// slack is what the agent's wake may receive beyond the target: metadata,
// framing and the wake's own traffic, less than a second range request
// of the 64 KiB the agent asks at a time (runtime/update fetch.go).
const slack = 16 << 10

// stopAndCheckReceived stops the always_on agent, which ends its wake,
// and fails the test if the wake received more than the target's signed
// length and slack over its link (its report's linkReceived): none of
// the blob's extra bytes.
func stopAndCheckReceived(t *testing.T, agent *testenv.Proc) {
	t.Helper()
	if err := agent.Stop(); err != nil {
		t.Fatalf("stopping the agent: %v", err)
	}
	m := agent.Wait(t, wakeReceived)
	n, _ := strconv.Atoi(m[1])
	t.Logf("the wake received %d bytes for the %d-byte target", n, endlessLen)
	if n < endlessLen || n > endlessLen+slack {
		t.Errorf("the wake received %d bytes; want the target's %d and at most %d more", n, endlessLen, slack)
	}
}
