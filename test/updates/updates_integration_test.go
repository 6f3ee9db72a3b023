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
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

var updateCheck = regexp.MustCompile(`msg="update check" `)

// ctl runs the torporctl binary and returns its standard output.
func ctl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "torporctl"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("torporctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// keygen writes a key file with torporctl and returns its did:key.
func keygen(t *testing.T, path string) string {
	return strings.TrimSpace(ctl(t, "keygen", path))
}

// world is a relay hosting an update repository, its operator, and the
// owner's directory with root version 1.
type world struct {
	dir, opKey, owner string
	opDID             string
	relay             *relaytest.Relay
	relayArgs         []string // to start it again
	agentBin          string   // the agent's binary; "" is this tree's
}

func newWorld(t *testing.T, relayArgs ...string) *world {
	w := &world{dir: t.TempDir()}
	w.opKey = filepath.Join(w.dir, "op.key")
	op := keygen(t, w.opKey)
	w.opDID = op
	snap, ts := filepath.Join(w.dir, "snapshot.key"), filepath.Join(w.dir, "timestamp.key")
	snapDID, tsDID := keygen(t, snap), keygen(t, ts)
	w.relayArgs = append([]string{"--operator", op, "--admission", "open",
		"--update-snapshot-key", snap, "--update-timestamp-key", ts}, relayArgs...)
	os.MkdirAll(filepath.Join(w.dir, "relay"), 0o700) // --store jetstream makes none
	w.relay = relaytest.Start(t, filepath.Join(w.dir, "relay"), w.relayArgs...)
	w.owner = filepath.Join(w.dir, "owner")
	ctl(t, "update", "keys", "init", "--dir", w.owner, "--relay-snapshot", snapDID, "--relay-timestamp", tsDID)
	return w
}

// agent starts torpor-agent, always on unless args say otherwise,
// provisioned with the owner's first root, running build version
// installed, downloading at most budget bytes a wake.
func (w *world) agent(t *testing.T, name string, installed uint64, budget int64, args ...string) (*testenv.Proc, string) {
	return w.agentAt(t, w.relay.URL, name, installed, budget, args...)
}

// agentAt is agent linked to the relay at url.
func (w *world) agentAt(t *testing.T, url, name string, installed uint64, budget int64, args ...string) (*testenv.Proc, string) {
	conf := map[string]any{"version": 1, "update": map[string]any{"version": installed, "budgetBytes": budget}}
	return w.agentWithAt(t, url, name, conf, args...)
}

// agentWith is agent with the configuration file conf.
func (w *world) agentWith(t *testing.T, name string, conf map[string]any, args ...string) (*testenv.Proc, string) {
	return w.agentWithAt(t, w.relay.URL, name, conf, args...)
}

// agentWithAt is agentWith linked to the relay at url.
func (w *world) agentWithAt(t *testing.T, url, name string, conf map[string]any, args ...string) (*testenv.Proc, string) {
	dir := filepath.Join(w.dir, name)
	key := filepath.Join(w.dir, name+".key")
	if _, err := os.Stat(key); err != nil { // a restarted agent keeps its key
		keygen(t, key)
	}
	meta := filepath.Join(dir, "update", "meta")
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join(w.owner, "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(meta, "root.json"), root, 0o600)
	b, _ := json.Marshal(conf)
	confFile := filepath.Join(w.dir, name+".json")
	os.WriteFile(confFile, b, 0o600)
	if len(args) == 0 {
		args = []string{"--mode", "always_on"}
	}
	binary := w.agentBin
	if binary == "" {
		binary = testenv.Binary(t, "torpor-agent")
	}
	p := testenv.Start(t, binary, append([]string{"--config", confFile, "--key", key, "--data-dir", dir,
		"--relay", url, "--name", name, "--purposes", "comms:*", "--handler", "*=exec:/bin/true"}, args...)...)
	return p, dir
}

// TestPublishedTargetReachesAgents: the owner signs the torpor-agent
// binary itself as version 2 for this machine's architecture and
// publishes it; an agent running version 1 fetches it over its link,
// verifies it and keeps it in update/verified/ under its SHA-256; an
// agent running version 5 refuses it as a rollback, and one running 5
// once version 9 is published for another architecture only refuses
// that as wrong hardware.
func TestPublishedTargetReachesAgents(t *testing.T) {
	w := newWorld(t)
	build := testenv.Binary(t, "torpor-agent")
	data, err := os.ReadFile(build)
	if err != nil {
		t.Fatal(err)
	}
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "torpor-agent/2/linux-"+goruntime.GOARCH, "--version", "2",
		"--goarch", goruntime.GOARCH, "--goarm", "", "--gzip", build)
	out := ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	if !strings.Contains(out, "targets.json") {
		t.Fatalf("publish printed %q", out)
	}
	older, olderDir := w.agent(t, "plot-1", 1, 64<<20)
	m := older.Wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified .*bytes=(\d+)`), "version=2")
	fetched, _ := strconv.Atoi(m[1])
	t.Logf("the %d-byte agent binary travelled gzip-compressed in %d bytes", len(data), fetched)
	matches, _ := filepath.Glob(filepath.Join(olderDir, "update", "verified", "*.out"))
	if len(matches) != 1 {
		t.Fatalf("decompressed files %v; want one", matches)
	}
	if got, err := os.ReadFile(matches[0]); err != nil || !bytes.Equal(got, data) || fetched >= len(data) {
		t.Fatalf("the verified file: %d bytes, %v; want the %d bytes signed, fetched in fewer (%d)", len(got), err, len(data), fetched)
	}
	newer, _ := w.agent(t, "plot-5", 5, 64<<20)
	newer.Wait(t, updateCheck, "outcome=refused", "reason=rollback", "older than the installed 5")

	// A newer build for another architecture only: wrong hardware.
	other := "arm"
	if goruntime.GOARCH == "arm" {
		other = "arm64"
	}
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "torpor-agent/9/linux-"+other, "--version", "9", "--goarch", other, build)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey)
	third, _ := w.agent(t, "plot-6", 5, 64<<20)
	third.Wait(t, updateCheck, "outcome=refused", "reason=wrong-hardware", "torpor-agent/9/linux-"+other)
}

// sleepScale runs the sleeping agent's day 600 times faster: an hour in
// 6 s, the relay's one-day timestamp in 144 s.
const sleepScale = "600"

// TestSleepingAgentResumes: an agent that sleeps between hourly windows
// (relay and agent on one scaled clock) downloads a 2.5 MB target 1 MiB a
// wake: its boot wake and the next window each stop at the budget and
// say so, the third wake resumes where they stopped and verifies it.
func TestSleepingAgentResumes(t *testing.T) {
	epoch := time.Now().UTC().Format(time.RFC3339Nano)
	w := newWorld(t, "--time-scale", sleepScale, "--time-epoch", epoch)
	target := filepath.Join(w.dir, "build")
	data := make([]byte, 2_500_000)
	rand.Read(data)
	os.WriteFile(target, data, 0o600)
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "app/2", "--version", "2", "--goarch", goruntime.GOARCH, "--goarm", "", target)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1", "--time-scale", sleepScale)
	agent, dir := w.agent(t, "sleeper", 1, 1<<20, "--mode", "hourly_wake", "--time-scale", sleepScale, "--time-epoch", epoch)
	agent.Next(t, 2, `msg="update check"`, "outcome=refused", "reason=budget", "bytes=1048576")
	agent.Next(t, 1, `msg="update check"`, "outcome=verified", fmt.Sprintf("bytes=%d", len(data)-2<<20))
	sum := sha256.Sum256(data)
	got, err := os.ReadFile(filepath.Join(dir, "update", "verified", hex.EncodeToString(sum[:])))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the verified file: %d bytes, %v", len(got), err)
	}
	if n := agent.Count(regexp.MustCompile(`msg=waking`)); n < 3 {
		t.Errorf("%d wakes; want the download spread over at least 3", n)
	}
	checkTransfer(t, agent, len(data))
	w.checkFleetUpdate(t, "sleeper", "verified", 2)
}

// checkFleetUpdate checks, through torporctl fleet --json (the relay's
// fleet API), that the signed status the relay keeps for the agent named
// name says outcome for version: the wake that fetched published it when
// it announced its next wake.
func (w *world) checkFleetUpdate(t *testing.T, name, outcome string, version uint64) {
	var fleet struct {
		Devices []struct {
			Name   string `json:"name"`
			Update *struct {
				Outcome string `json:"outcome"`
				Version uint64 `json:"version"`
			} `json:"update"`
		} `json:"devices"`
	}
	out := ctl(t, "fleet", "--relay", w.relay.URL, "--key", w.opKey, "--json", "--time-scale", sleepScale)
	if err := json.Unmarshal([]byte(out), &fleet); err != nil {
		t.Fatalf("torporctl fleet --json: %v\n%s", err, out)
	}
	for _, d := range fleet.Devices {
		if d.Name == name && d.Update != nil && d.Update.Outcome == outcome && d.Update.Version == version {
			return
		}
	}
	t.Errorf("the fleet API has no %s update of version %d for %s:\n%s", outcome, version, name, out)
}

var wakeReceived = regexp.MustCompile(`msg=wake .*linkReceived=(\d+)`)

// checkTransfer logs the bytes the agent's first three wakes received
// over the link (the wake report's linkReceived), which carried the
// whole target, and checks that they exceed the target by at most
// 64 KiB: metadata, framing and the wakes' own traffic.
func checkTransfer(t *testing.T, agent *testenv.Proc, target int) {
	agent.Next(t, 1, "msg=wake ", "linkReceived=") // the third wake's report
	var total int
	for _, line := range strings.Split(agent.Log(), "\n") {
		if m := wakeReceived.FindStringSubmatch(line); m != nil && total < target {
			n, _ := strconv.Atoi(m[1])
			total += n
			t.Logf("wake received %d bytes", n)
		}
	}
	if total < target || total > target+64<<10 {
		t.Errorf("the wakes that fetched the %d-byte target received %d bytes; want at most 64 KiB more", target, total)
	}
}

// TestReplayedRepositoryIsAFreeze: the relay's updates.db is put back to
// an earlier copy (a restored backup, or a relay replaying old
// metadata) after an agent took a newer publish. The relay signs nothing
// older itself, so its timestamp is the old one; the agent, which keeps
// the newer one, refuses it as a freeze and installs nothing.
func TestReplayedRepositoryIsAFreeze(t *testing.T) {
	addr := testenv.FreeAddr(t)
	w := newWorld(t, "--listen", addr)
	target := filepath.Join(w.dir, "build")
	os.WriteFile(target, []byte("build 2"), 0o600)
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "app/2", "--version", "2", "--goarch", goruntime.GOARCH, "--goarm", "", target)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	db := filepath.Join(w.dir, "relay", "updates.db")
	w.restartRelay(t, func() { copyFile(t, db, db+".old") })
	os.WriteFile(target, []byte("build 3"), 0o600)
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "app/3", "--version", "3", "--goarch", goruntime.GOARCH, "--goarm", "", target)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey)
	agent, _ := w.agent(t, "plot-1", 1, 1<<20)
	agent.Wait(t, updateCheck, "outcome=verified", "target=app/3")
	agent.Stop()
	w.restartRelay(t, func() { copyFile(t, db+".old", db) })
	again, _ := w.agent(t, "plot-1", 1, 1<<20)
	again.Next(t, 1, `msg="update check"`, "outcome=refused", "reason=freeze", "timestamp is older than the trusted one")
}

// restartRelay stops the relay, runs between, and starts it again on
// the same data directory and flags.
func (w *world) restartRelay(t *testing.T, between func()) {
	if err := w.relay.Stop(); err != nil {
		t.Fatalf("stopping the relay: %v", err)
	}
	between()
	w.relay = relaytest.Start(t, filepath.Join(w.dir, "relay"), w.relayArgs...)
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
