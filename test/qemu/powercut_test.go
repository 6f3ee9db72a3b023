//go:build integration

package qemu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/vm"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// powerCutTrials is the number of power cuts of each queue engine of
// TestPowerCut.
const powerCutTrials = 10

// powerCutEngines are the relay's queue engines (--queue-engine) that
// TestPowerCut runs, each on its own disk. The record log runs with
// segments of rotateSegment bytes, so that it starts a new segment file
// every few dozen records and the power is also cut while it rotates.
var powerCutEngines = []string{"bolt", "log"}

// rotateSegment is the record log's --queue-segment-size in TestPowerCut.
const rotateSegment = 16 << 10

// minRotations is the newest segment the record log must reach in
// TestPowerCut: one run with 16 KiB segments, its cuts timed from the
// relay's listening line, reached 29 in 10 cuts (747 messages answered
// queued); one whose cuts were timed from READY reached 6 under load,
// half its cuts spent before the relay answered.
const minRotations = 10

// newDisk makes a raw image of size bytes with an ext4 file system on
// it, made on the host (mkfs.ext4 from e2fsprogs, no root needed).
func newDisk(t testing.TB, size int64) string {
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

// The relay in the guest listens on guestRelayPort; its public URL, the
// audience of every token, is its loopback address in the guest, where
// the agent links to it.
const (
	guestRelayPort = 8080
	guestRelayURL  = "http://127.0.0.1:8080"
)

// binState is what the host knows across the boots of TestPowerCut.
type binState struct {
	mu        sync.Mutex
	queued    map[string]string // body hash -> object id, answered 503 queued: true
	delivered map[string]int    // object id -> DELIVERED lines of the sink
	outbox    map[string]bool   // object ids seen in the agent's outbox at a boot: possibly lost
	// boot's counts: outbox entries and records still queued at its start,
	// messages answered queued since.
	bootOutbox, bootPresent, bootAnswered int
	// segment is the record log's newest segment file at the last boot.
	segment int
}

// cutConfig is torpor-agent's configuration for the power-cut boots: mode
// sleep (the relay queues every message, linked or not), a drain once at
// every boot, plaintext objects accepted (MLS is not under test here),
// at-most-once notify to the sink, its store on the disk.
func cutConfig(t testing.TB) []byte {
	t.Helper()
	c := map[string]any{
		"version": 1, "key": guestKey, "dataDir": "/data/agent", "relay": guestRelayURL, "name": "powercut-agent",
		"board": "qemu-virt", "wake": map[string]any{"methods": []string{"timer"}}, "mode": "sleep",
		"purposes": []string{"comms:*"}, "allowPlaintext": true, "notify": "at-most-once", "keyPackages": 2,
		"handlers": []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": "/bin/sink", "timeout": "30s"}}},
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cutMachine is the guest of every boot: test/qemu/guest/powercut, the real
// relay with the queue engine and agent (cross-built for arm64), the sink,
// the agent's key and configuration, a new disk and the network with the
// relay's port forwarded from the host.
func cutMachine(t *testing.T, key *did.PrivateKey, engine string) vm.Machine {
	t.Helper()
	m := vm.Machine{Kernel: vm.FindKernel(t),
		Files: map[string][]byte{
			"bin/powercut":                       vm.GuestBinary(t, "./test/qemu/guest/powercut"),
			"bin/torpor-relay":                   vm.GuestBinary(t, "./cmd/torpor-relay"),
			"bin/torpor-agent":                   vm.GuestBinary(t, "./cmd/torpor-agent"),
			"bin/sink":                           vm.GuestBinary(t, "./test/qemu/guest/sink"),
			strings.TrimPrefix(guestConfig, "/"): cutConfig(t),
			strings.TrimPrefix(guestKey, "/"):    did.MarshalKeyFile(key),
		},
		Modes:   map[string]uint32{strings.TrimPrefix(guestKey, "/"): 0o600},
		Modules: append(append([]string(nil), diskModules...), "virtio_net"), Net: true,
		Disk: newDisk(t, 256<<20), Mounts: []string{"/dev/vda:/data:ext4"}, Run: "/bin/powercut",
		Args: []string{"-dir", "/data", "-engine", engine, "-agent", key.DID().String(), "-config", guestConfig, "--",
			"--listen", fmt.Sprintf(":%d", guestRelayPort), "--public-url", guestRelayURL, "--allow-agent", key.DID().String(),
			"--max-messages", "100000", "--max-per-peer", "100000", "--max-peer-bytes", "1073741824", "--max-bytes", "1073741824"},
	}
	if engine == "log" {
		m.Args = append(m.Args, "--queue-segment-size", strconv.Itoa(rotateSegment))
	}
	m.Initrd = m.WriteInitramfs(t)
	return m
}

// TestPowerCut cuts the guest's power (QMP quit) 10 times for each queue
// engine of the relay (bolt, then the record log, each on a new disk) at a
// random moment while the real torpor-relay, in the guest, enqueues the
// A2A messages 4 senders on the host post through a port forward (while
// it holds fewer than cutBacklog for the agent), and the
// real torpor-agent, linked to it over the guest's loopback, drains the
// queue to its exec handler (test/qemu/guest/sink), both with their data
// on ext4 on a virtio disk with cache=none (test/qemu/guest/powercut).
// After every reboot, every message the relay answered 503 queued: true is
// still in its queue, or was handed to the handler, or is in the agent's
// outbox (committed by the agent; at-most-once recovery reports it
// possibly lost and drops it); and no object reached the handler twice,
// ever. A last boot without senders drains the queue to its end: every
// message answered queued was handed over once, or was in the outbox.
func TestPowerCut(t *testing.T) {
	for _, engine := range powerCutEngines {
		t.Run(engine, func(t *testing.T) { powerCuts(t, engine) })
	}
}

// powerCuts is TestPowerCut with the relay's queue engine.
func powerCuts(t *testing.T, engine string) {
	key := didtest.New(t)
	m := cutMachine(t, key, engine)
	senders := make([]*did.PrivateKey, 4)
	for i := range senders {
		senders[i] = didtest.New(t)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 9))
	st := &binState{queued: map[string]string{}, delivered: map[string]int{}, outbox: map[string]bool{}}
	start := time.Now()
	for boot := 0; boot <= powerCutTrials; boot++ {
		port := testenv.FreePort(t)
		m.Forward = []string{fmt.Sprintf("tcp:127.0.0.1:%d-:%d", port, guestRelayPort)}
		v := vm.Start(t, m)
		ready := st.awaitReady(t, v, boot)
		if boot == powerCutTrials {
			st.finalDrain(t, v, ready)
			break
		}
		cut := time.Duration(rng.IntN(8000)) * time.Millisecond
		since := awaitListening(t, v, ready, boot)
		full := func() bool { return st.full(v, ready) }
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var sent [4]int
		for i, s := range senders {
			wg.Add(1)
			go func() { defer wg.Done(); sent[i] = st.send(ctx, s, key.DID(), port, boot, i, full) }()
		}
		<-time.After(cut)
		powerCut(t, v)
		stop()
		wg.Wait()
		n := st.collect(t, v.Lines()[ready:])
		t.Logf("boot %d: %d queued and %d in the outbox at the start; the relay listened %v after READY, power cut %v after that: %v answered queued, %d handed over",
			boot, st.bootPresent, st.bootOutbox, since.Round(time.Millisecond), cut, sent, n)
		if t.Failed() {
			t.Fatalf("seed %d, boot %d", seed, boot)
		}
	}
	t.Logf("--queue-engine %s, seed %d: %d power cuts and a last boot in %v: %d messages answered queued, %d objects handed over, %d possibly lost (in the outbox at a boot), newest segment %d",
		engine, seed, powerCutTrials, time.Since(start).Round(time.Second), len(st.queued), len(st.delivered), len(st.outbox), st.segment)
	if engine == "log" && st.segment < minRotations {
		t.Errorf("the record log reached segment %d in %d power cuts: it rotated too seldom for the cuts to meet a rotation", st.segment, powerCutTrials)
	}
}

// powerCut quits QEMU over QMP and waits for it to exit.
func powerCut(t *testing.T, v *vm.VM) {
	t.Helper()
	q, err := v.QMP()
	if err != nil {
		t.Fatal(err)
	}
	q.Execute("quit", nil) // QEMU exits at once: the answer may not come
	q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v.Wait(ctx)
}

// awaitListening waits up to 2 minutes for the guest's torpor-relay to
// log that it listens, from console line ready on, and returns how long
// after the call (made as READY is read) that was. The power cuts are
// timed from that line, not from READY: under load the relay's start can
// take seconds, and cuts spent before it answers anything would leave the
// record log too few records to rotate (minRotations). An ERROR line (a
// program exited) fails the test.
func awaitListening(t *testing.T, v *vm.VM, ready, boot int) time.Duration {
	t.Helper()
	start := time.Now()
	awaitLine(t, v, ready, boot, "the relay's listening line", func(l string) bool {
		return strings.Contains(l, "torpor-relay listening")
	})
	return time.Since(start)
}

// cutBacklog is how many records the senders let the relay hold for the
// agent (see binState.full). The agent drains about 12 records a second
// under TCG, so it bounds the last boot's drain, and the test's time,
// whatever the senders' speed: past it they post as fast as the agent
// drains.
const cutBacklog = 300

// full reports whether the relay holds cutBacklog records for the agent or
// more, counting those queued at the boot's start, plus the messages
// answered queued since, less the DELIVERED lines of v from line ready.
// (Records acknowledged and not handed over, the outbox's, are not
// subtracted: the count is never below the relay's.)
func (st *binState) full(v *vm.VM, ready int) bool {
	handed := 0
	for _, l := range v.Lines()[ready:] {
		if strings.HasPrefix(l, "DELIVERED ") {
			handed++
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.bootPresent+st.bootAnswered-handed >= cutBacklog
}

// send posts messages from key to agent through the relay at the host's
// port until ctx ends, recording each one the relay answered 503 queued:
// true; it returns how many. Refusals (the relay or the agent not up yet)
// are retried after 100 ms of real time, the peer being a real process,
// and so is a post while full() is true.
func (st *binState) send(ctx context.Context, key *did.PrivateKey, agent did.DID, port, boot, s int, full func() bool) int {
	hc := &http.Client{Timeout: 10 * time.Second}
	aud := guestRelayURL + "/a/" + agent.String()
	url := fmt.Sprintf("http://127.0.0.1:%d/a/%s/a2a/jsonrpc", port, agent)
	n := 0
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("b%d-s%d-%d", boot, s, i)
		body, err := relaytest.ObjectBody(key, id, "urn:torpor:test:powercut")
		if err != nil {
			panic(err)
		}
		if !full() && st.post(ctx, hc, key, aud, url, body) {
			h := sha256.Sum256(body)
			st.mu.Lock()
			st.queued[fmt.Sprintf("%x", h[:8])] = id
			st.bootAnswered++
			st.mu.Unlock()
			n++
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return n
}

// post sends one body with a fresh DID Bearer token and reports whether
// the relay answered 503 with queued true (transport/relay's asleep
// answer, after the record's commit).
func (st *binState) post(ctx context.Context, hc *http.Client, key *did.PrivateKey, aud, url string, body []byte) bool {
	tok, err := bearer.Issue(key, aud, time.Now(), 0)
	if err != nil {
		panic(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, a2a.Version10)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	var a struct {
		Queued bool `json:"queued"`
	}
	return json.Unmarshal(ans, &a) == nil && a.Queued
}

// awaitREADY waits up to 2 minutes for the power-cut guest program's
// READY line at boot and returns the index of the console line after it;
// an ERROR line or no READY fails the test.
func awaitREADY(t *testing.T, v *vm.VM, boot int) int {
	t.Helper()
	return awaitLine(t, v, 0, boot, "READY", func(l string) bool { return l == "READY" })
}

// awaitLine waits up to 2 minutes for a console line of v from line from
// on that match accepts, and returns the index of the line after it; an
// ERROR line of the guest program (one of its programs exited) or no such
// line fails the test, naming want.
func awaitLine(t *testing.T, v *vm.VM, from, boot int, want string, match func(string) bool) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, next, err := v.Await(ctx, from, func(l string) bool { return match(l) || strings.HasPrefix(l, "ERROR") })
	if err != nil || !match(l) {
		t.Fatalf("boot %d: %q, %v; want %s", boot, l, err, want)
	}
	return next
}

// awaitReady waits for the guest program's READY and checks its OUTBOX and PRESENT
// lines: every message answered queued so far is still queued, was handed
// over, or is in the agent's outbox. It returns the index of the console
// line after READY.
func (st *binState) awaitReady(t *testing.T, v *vm.VM, boot int) int {
	t.Helper()
	ready := awaitREADY(t, v, boot)
	present := map[string]bool{}
	st.bootOutbox, st.bootAnswered = 0, 0
	for _, l := range v.Lines()[:ready] {
		if id, ok := strings.CutPrefix(l, "OUTBOX "); ok {
			st.outbox[id] = true
			st.bootOutbox++
		} else if h, ok := strings.CutPrefix(l, "PRESENT "); ok {
			present[h] = true
		}
	}
	st.bootPresent = len(present)
	for _, l := range v.Lines()[:ready] {
		if n, ok := strings.CutPrefix(l, "SEGMENT "); ok {
			st.segment, _ = strconv.Atoi(n)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var missing []string
	for h, id := range st.queued {
		if !present[h] && st.delivered[id] == 0 && !st.outbox[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("boot %d: %d messages answered queued are neither queued, nor handed over, nor in the agent's outbox: %v",
			boot, len(missing), missing[:min(len(missing), 10)])
	}
	return ready
}

// collect reads a boot's DELIVERED lines, failing the test on an object
// handed over twice, the guest program's ERROR lines or a panic; it returns how many
// it read.
func (st *binState) collect(t *testing.T, lines []string) int {
	t.Helper()
	n := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "ERROR ") || strings.HasPrefix(l, "panic:"):
			t.Errorf("guest: %s", l)
		case strings.HasPrefix(l, "DELIVERED "):
			var d sinkLine
			if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "DELIVERED ")), &d); err != nil {
				continue // cut off mid-line
			}
			if st.delivered[d.ObjectID]++; st.delivered[d.ObjectID] > 1 {
				t.Errorf("%s handed over %d times", d.ObjectID, st.delivered[d.ObjectID])
			}
			n++
		}
	}
	return n
}

// finalDrain waits for the agent's wake report of a boot without senders
// and checks that every message answered queued was handed over, or was in
// the outbox at a boot.
func (st *binState) finalDrain(t *testing.T, v *vm.VM, ready int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, next, err := v.Await(ctx, ready, func(s string) bool {
		l, err := procs.ParseLine(s)
		return err == nil && l.Msg == "wake"
	})
	if err != nil {
		t.Fatalf("the last boot's agent did not report its wake: %v", err)
	}
	t.Logf("last boot: %d queued and %d in the outbox at the start: %s", st.bootPresent, st.bootOutbox, l)
	dl, _ := procs.ParseLine(l)
	if c := drainCounts(dl.First("drain")); c["records"] != st.bootPresent || c["deferred"] != 0 || c["handOffFailed"] != 0 {
		t.Errorf("the last drain took %d records (want the %d queued), deferred %d and failed %d hand-offs (want none)",
			c["records"], st.bootPresent, c["deferred"], c["handOffFailed"])
	}
	st.collect(t, v.Lines()[ready:next])
	powerCut(t, v)
	dropped := 0
	for _, id := range st.queued {
		if st.delivered[id] == 0 {
			if !st.outbox[id] {
				t.Errorf("%s was answered queued, never handed over and never in the outbox", id)
			}
			dropped++
		}
	}
	t.Logf("last boot: %d messages answered queued were never handed over, all of them possibly lost by the agent's report", dropped)
}
