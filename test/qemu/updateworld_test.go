//go:build integration

package qemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// cutScale is the time scale of TestUpdatePowerCut's relay and agents:
// an hour passes in 12 s, so an hourly_wake agent wakes every 12 s and
// its download spans several wakes and boots. The guest's clock is set
// from the host's at each boot (test/qemu/timesync) to a few
// milliseconds, a second or two on this clock.
const cutScale = 300

// cutBudget is the agents' "update.budgetBytes": the arm64 build of
// torpor-agent the guest runs, gzip-compressed, is about 4 MB, so its
// download takes three wakes and a cut often lands in it.
const cutBudget = 3 << 19

// updateWorld is TestUpdatePowerCut's side on the host: the relay, its
// operator, the owner's repository on it with the working 2.0.0 and the
// broken build, each signed as version 2 of its own target for arm64,
// and the rollouts the test starts, one per round of each device.
type updateWorld struct {
	t                  *testing.T
	relay              *hostRelay
	ctl, dir, op       string
	epoch              string
	dids, targets, sum map[string]string // by device: its DID, its target's name and SHA-256 as signed
	keys               map[string][]byte // by device: its key file

	mu      sync.Mutex
	started map[string]bool // rollout ids asked for
	queue   chan [2]string  // rollouts to start: id, device
}

// newUpdateWorld starts the relay with an operator and the online update
// keys, makes the owner's keys (torporctl update keys init), signs good
// and bad (torporctl update sign-target --gzip) and publishes them.
func newUpdateWorld(t *testing.T, good, bad []byte) *updateWorld {
	t.Helper()
	w := &updateWorld{t: t, dir: t.TempDir(), epoch: time.Now().UTC().Format(time.RFC3339Nano),
		dids: map[string]string{}, targets: map[string]string{}, sum: map[string]string{}, keys: map[string][]byte{},
		started: map[string]bool{}, queue: make(chan [2]string, 64)}
	w.ctl = filepath.Join(w.dir, "torporctl")
	if err := os.WriteFile(w.ctl, vm.CrossBinary(t, "./cmd/torporctl", goruntime.GOARCH, ""), 0o755); err != nil {
		t.Fatal(err)
	}
	w.op = filepath.Join(w.dir, "op.key")
	opDID, snap, ts := w.keygen(w.op), filepath.Join(w.dir, "snapshot.key"), filepath.Join(w.dir, "timestamp.key")
	snapDID, tsDID := w.keygen(snap), w.keygen(ts)
	for _, dev := range cutDevices {
		k := didtest.New(t)
		w.dids[dev], w.keys[dev] = k.DID().String(), did.MarshalKeyFile(k)
	}
	w.relay = startRelay(t, relayOptions{Guest: true, Allow: []string{w.dids["good"], w.dids["bad"]},
		Args: []string{"--operator", opDID, "--update-snapshot-key", snap, "--update-timestamp-key", ts,
			"--time-scale", strconv.Itoa(cutScale), "--time-epoch", w.epoch}})
	owner := filepath.Join(w.dir, "owner")
	w.run("update", "keys", "init", "--dir", owner, "--relay-snapshot", snapDID, "--relay-timestamp", tsDID)
	for dev, b := range map[string][]byte{"good": good, "bad": bad} {
		w.targets[dev] = map[string]string{"good": "torpor-agent", "bad": "torpor-agent-broken"}[dev] + "/2/linux-arm64"
		f := filepath.Join(w.dir, dev)
		if err := os.WriteFile(f, b, 0o755); err != nil {
			t.Fatal(err)
		}
		w.run("update", "sign-target", "--dir", owner, "--name", w.targets[dev], "--version", "2",
			"--goarch", "arm64", "--goarm", "", "--gzip", f)
	}
	w.run("update", "publish", "--dir", owner, "--relay", w.relay.URL, "--key", w.op, "--root", "1",
		"--time-scale", strconv.Itoa(cutScale))
	for dev, name := range w.targets {
		w.sum[dev] = testenv.SignedSHA256(t, owner, name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go w.starter(ctx, done)
	return w
}

func (w *updateWorld) keygen(path string) string {
	return strings.TrimSpace(w.run("keygen", path))
}

// run runs torporctl. Its requests reach the relay at the guest's URL
// for it (the audience of the relay's tokens) through the relay itself
// as the HTTP proxy: Go's server takes a request's absolute form (RFC
// 9112, Section 3.2.2).
func (w *updateWorld) run(args ...string) string {
	w.t.Helper()
	out, err := w.command(args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("torporctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (w *updateWorld) command(args ...string) *exec.Cmd {
	cmd := exec.Command(w.ctl, args...)
	if w.relay != nil {
		cmd.Env = append(os.Environ(), "HTTP_PROXY=http://"+w.relay.addr, "NO_PROXY=", "no_proxy=", "http_proxy=")
	}
	return cmd
}

// onLine starts the rollouts the guest's line asks for: "ROUND <device>
// <n>" a round's (id <device>-<n>), "RETRY <device> <n> <k>: ..." a retry
// of round n's (id <device>-<n>-<k>). Each is asked for once, from the
// first line that names it.
func (w *updateWorld) onLine(l string) {
	f := strings.Fields(strings.TrimSuffix(strings.SplitN(l, ":", 2)[0], ":"))
	var id string
	switch {
	case len(f) == 3 && f[0] == "ROUND":
		id = f[1] + "-" + f[2]
	case len(f) == 4 && f[0] == "RETRY":
		id = f[1] + "-" + f[2] + "-" + f[3]
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started[id] {
		w.started[id] = true
		w.queue <- [2]string{id, f[1]}
	}
}

// starter starts the rollouts queued by onLine, each offering its
// device's target to that device alone, trying again while the relay
// does not know the device yet (its first link).
func (w *updateWorld) starter(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		var r [2]string
		select {
		case r = <-w.queue:
		case <-ctx.Done():
			return
		}
		for {
			out, err := w.command("update", "rollout", "--relay", w.relay.URL, "--key", w.op, "--time-scale", strconv.Itoa(cutScale),
				"start", r[0], "--target", w.targets[r[1]], "--version", "2", "--sha256", w.sum[r[1]], "--waves", "100",
				"--devices", w.dids[r[1]]).CombinedOutput()
			if err == nil {
				break
			}
			if !strings.Contains(string(out), "not a device of this relay") {
				w.t.Errorf("rollout %s: %v\n%s", r[0], err, out)
				break
			}
			select {
			case <-time.After(500 * time.Millisecond): // the device links at its first wake
			case <-ctx.Done():
				return
			}
		}
	}
}

// follow hands every console line of v to onLine until v exits.
func (w *updateWorld) follow(v *vm.VM) {
	v.Await(context.Background(), 0, func(l string) bool { w.onLine(l); return false })
}
