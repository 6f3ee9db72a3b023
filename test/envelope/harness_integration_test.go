//go:build integration

package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	genv "github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// scale is the time scale of the relay, the agent and torporctl send: a
// scaled minute passes in 0.6 s.
const scale = 100

// The purpose, unit and schema of the test's actions.
const (
	purposePay = "action:pay"
	unit       = "EUR-cent"
	schema     = "urn:torpor:test:envelope:payment"
)

// key returns the did:key whose Ed25519 seed is n; the same n gives the
// same key in every run.
func key(t testing.TB, n byte) *did.PrivateKey {
	t.Helper()
	seed := make([]byte, 32)
	seed[0], seed[31] = 'E', n // 'E', so that these keys differ from other packages'
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// cast is the test's identities: the device's owner, the principal P, its
// agent A, the sender B A delegates to, a stranger C who never held a
// passport, the device, another device and the relay's operator.
type cast struct {
	owner, principal, agentA, sender, stranger, device, other, operator *did.PrivateKey
}

func newCast(t testing.TB) cast {
	return cast{owner: key(t, 1), principal: key(t, 2), agentA: key(t, 3), sender: key(t, 4), stranger: key(t, 5),
		device: key(t, 6), other: key(t, 7), operator: key(t, 8)}
}

// world is one relay and one sleeping agent on a shared scaled clock, the
// application's sink for the actions the agent runs, and the key files.
type world struct {
	t     *testing.T
	dir   string
	cast  cast
	epoch time.Time
	clk   clock.Clock // the relay's and the agent's clock
	relay *relaytest.Relay
	sink  *procs.Sink
	agent *testenv.Proc
	files map[*did.PrivateKey]string
}

// newWorld starts the relay (scaled, every device admitted, the cast's
// operator) and the application's sink.
func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), cast: newCast(t), epoch: time.Now().UTC(), files: map[*did.PrivateKey]string{}}
	var err error
	if w.clk, err = clock.NewScaledAt(clock.Real, scale, w.epoch); err != nil {
		t.Fatal(err)
	}
	w.relay = relaytest.Start(t, filepath.Join(w.dir, "relay"), append(w.timeFlags(),
		"--admission", "open", "--operator", w.cast.operator.DID().String())...)
	// A short socket path: a unix socket's name has at most 107 bytes.
	sock, err := os.CreateTemp("", "envsink")
	if err != nil {
		t.Fatal(err)
	}
	sock.Close()
	os.Remove(sock.Name())
	if w.sink, err = procs.StartSink(sock.Name(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.sink.Close(); os.Remove(sock.Name()) })
	return w
}

// timeFlags put a process on the world's clock.
func (w *world) timeFlags() []string {
	return []string{"--time-scale", strconv.Itoa(scale), "--time-epoch", w.epoch.Format(time.RFC3339Nano)}
}

// keyFile writes k as a key file once and returns its path.
func (w *world) keyFile(k *did.PrivateKey) string {
	if p, ok := w.files[k]; ok {
		return p
	}
	p := testenv.KeyFile(w.t, k)
	w.files[k] = p
	return p
}

// wakeRE matches the agent's log line that ends a wake, with its reason
// and its drain.
var wakeRE = regexp.MustCompile(`msg=wake .*reason=(\w+) .*drain="records=(\d+) `)

// start runs the real torpor-agent, the device, in mode sleep with one
// wake scheduled at wake (its operator's, in its configuration file): it
// boots, publishes its card and KeyPackages, drains nothing and sleeps
// until then. start returns when the boot wake ended.
func (w *world) start(wake time.Time) {
	w.t.Helper()
	conf := w.writeFile("agent.json", fmt.Appendf(nil, `{"version": 1, "scheduledWake": %q}`, wake.UTC().Format(time.RFC3339)))
	c := w.cast
	args := append([]string{"--config", conf, "--key", w.keyFile(c.device), "--data-dir", filepath.Join(w.dir, "agent"), "--relay", w.relay.URL,
		"--mode", "sleep", "--name", "envelope", "--owner", c.owner.DID().String(),
		"--purposes", "comms:*,action:*", "--consequential", "action:*", "--allow-plaintext",
		"--handler", "action:*=unix:" + w.sink.Socket + "#/action"}, w.timeFlags()...)
	w.agent = testenv.Start(w.t, testenv.Binary(w.t, "torpor-agent"), args...)
	if m := w.agent.Next(w.t, 1, "msg=wake "); !strings.Contains(m[0], `drain="records=0 `) {
		w.t.Fatalf("the boot wake: %s; want nothing drained", m[0])
	}
}

// ctl runs the real torporctl with args in a directory that is also its
// HOME and returns its stdout; it fails the test when torporctl fails.
func (w *world) ctl(args ...string) string {
	w.t.Helper()
	out, errOut, err := w.tryCtl(args...)
	if err != nil {
		w.t.Fatalf("torporctl %v: %v\n%s%s", args, err, out, errOut)
	}
	return out
}

// tryCtl is ctl that returns the stderr and the error instead.
func (w *world) tryCtl(args ...string) (string, string, error) {
	w.t.Helper()
	cmd := exec.Command(testenv.Binary(w.t, "torporctl"), args...)
	cmd.Dir = w.t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+cmd.Dir, "TORPOR_KEY=", "TORPOR_RELAY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// writeFile writes b to a new file of the world's named name.
func (w *world) writeFile(name string, b []byte) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// issue runs torporctl passport issue: issuer grants scopes to sub at aud
// for ttl, attenuating the passport in the file parent unless it is
// empty. It returns the file the passport is written to, named name.
func (w *world) issue(name string, issuer, sub, aud *did.PrivateKey, scopes []genv.Scope, parent string, ttl time.Duration) string {
	w.t.Helper()
	b, err := json.Marshal(scopes)
	if err != nil {
		w.t.Fatal(err)
	}
	args := []string{"passport", "issue", "--key", w.keyFile(issuer), "--sub", sub.DID().String(), "--aud", aud.DID().String(),
		"--envelope", w.writeFile(name+".envelope.json", b), "--ttl", ttl.String()}
	if parent != "" {
		args = append(args, "--parent", parent)
	}
	return w.writeFile(name+".jws", []byte(w.ctl(args...)))
}

// token reads a passport file.
func (w *world) token(file string) string {
	w.t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

// sendCtl sends an object of purpose with payload from k to the device
// with torporctl send (in k's MLS pair session with the device, which the
// first send establishes through the relay; on the relay's clock) and
// extra flags, and fails the test unless the relay queued it.
func (w *world) sendCtl(k *did.PrivateKey, purpose string, payload any, extra ...string) {
	w.t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	args := append([]string{"send", w.cast.device.DID().String(), "--relay", w.relay.URL, "--key", w.keyFile(k),
		"--json", "--time-scale", strconv.Itoa(scale), "--purpose", purpose, "--schema", schema,
		"--payload", string(b)}, extra...)
	var res sender.Result
	if out := w.ctl(args...); json.Unmarshal([]byte(out), &res) != nil || res.Outcome != sender.Queued {
		w.t.Fatalf("torporctl send %s: %s, want queued", payload, out)
	}
}

// sendLib sends an action with payload from k to the device, unencrypted,
// through the Go sender library, presenting chain: the chains torporctl
// send checks and refuses to present (another holder's, a wrong audience,
// a broken or a widened chain) reach the device so, as a careless or
// hostile sender's would.
func (w *world) sendLib(k *did.PrivateKey, payload any, chain ...string) {
	w.t.Helper()
	o, err := governed.Sign(k, governed.Template{IssuedAt: w.clk.Now(), Semantic: governed.Semantic{Schema: schema},
		Payload: payload, Purpose: purposePay, TTL: 24 * time.Hour})
	if err != nil {
		w.t.Fatal(err)
	}
	p := &sender.Plaintext{Relay: w.relay.URL, Key: k, Clock: w.clk, Envelope: &a2a.EnvelopeMetadata{Passports: chain}}
	a, err := p.Attempt(context.Background(), w.cast.device.DID(), o)
	if err != nil || !a.Queued {
		w.t.Fatalf("sending %s: %+v, %v; want queued", payload, a, err)
	}
}

// device reads the device's page from the relay's fleet console API, as
// the operator: what its latest signed status says.
func (w *world) device(t testing.TB) operatorapi.Device {
	t.Helper()
	tok, err := bearer.IssuePurpose(w.cast.operator, w.relay.URL, bearer.PurposeFleet, w.clk.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Authorization": {"Bearer " + tok}}
	a := relaytest.Do(t, "GET", w.relay.URL+"/fleet/api/devices/"+url.PathEscape(w.cast.device.DID().String()), h, nil)
	var d operatorapi.Device
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &d) != nil {
		t.Fatalf("GET the device's page: %s", a)
	}
	return d
}
