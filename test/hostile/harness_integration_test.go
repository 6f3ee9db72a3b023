//go:build integration

package hostile

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// startRelay runs torpor-relay on loopback (ports chosen by the kernel)
// with a fresh data directory and extra flags, and waits until it serves.
func startRelay(t testing.TB, extra ...string) *relayProc {
	t.Helper()
	return startRelayIn(t, t.TempDir(), extra...)
}

// startRelayIn is startRelay on the data directory dir, to restart a
// relay on the files of one that stopped.
func startRelayIn(t testing.TB, dir string, extra ...string) *relayProc {
	t.Helper()
	return relaytest.Start(t, dir, extra...)
}

// key returns the did:key whose Ed25519 seed is n; the same n gives the
// same key in every run.
func key(t testing.TB, n int) *did.PrivateKey {
	t.Helper()
	seed := make([]byte, 32)
	seed[0] = 0x48 // 'H', so that these keys differ from other packages'
	seed[29], seed[30], seed[31] = byte(n>>16), byte(n>>8), byte(n)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// freshKey returns a new random did:key, a "free DID" anyone can make.
func freshKey(t testing.TB) *did.PrivateKey {
	t.Helper()
	seed := make([]byte, 32)
	rand.Read(seed)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// relayProc is a running torpor-relay.
type relayProc = relaytest.Relay

// What a device does on its link, in a few lines.
var (
	publish = relaytest.Publish
	pullAll = relaytest.PullAll
)

// answer is a relay's HTTP answer.
type answer = relaytest.Response

// What a sender does, in a few lines.
var (
	send = relaytest.Post
	do   = relaytest.Do
)

// wirePart is an mls-wire part (draft-chapman-a2a-mls-03, Section 7.5)
// whose bytes the relay cannot read: an ordinary MLS message to it.
func wirePart(tag string) string {
	return `{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"` +
		base64.StdEncoding.EncodeToString([]byte(tag)) + `"}}`
}

// welcomePart is an mls-wire part carrying an MLSMessage whose wire format
// is a Welcome (RFC 9420, Section 6): a handshake to the relay.
func welcomePart() string {
	return `{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"AAEAAwAA"}}`
}

// message returns an A2A v1.0 SendMessage request with id and parts.
func message(id string, parts ...string) string {
	mid, _ := json.Marshal("m-" + id)
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"SendMessage","params":{"message":{"messageId":` +
		string(mid) + `,"role":"ROLE_USER","parts":[` + strings.Join(parts, ",") + `]}}}`
}

// queued returns the bodies queued for dev by sequence number.
func queued(t testing.TB, url string, dev *did.PrivateKey) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	for _, r := range pullAll(t, url, dev) {
		out[r.Seq] = string(r.Body)
	}
	return out
}

// assertKept fails unless every record of before is still queued for dev,
// byte for byte: nothing accepted before a hostile request was lost or
// changed by it. It returns what is queued now.
func assertKept(t testing.TB, url string, dev *did.PrivateKey, before map[uint64]string) map[uint64]string {
	t.Helper()
	now := queued(t, url, dev)
	for seq, body := range before {
		if got, ok := now[seq]; !ok {
			t.Errorf("record %d accepted before is gone", seq)
		} else if got != body {
			t.Errorf("record %d changed:\n got %s\nwant %s", seq, got, body)
		}
	}
	return now
}

// sleeper is a relay with one sleeping device that already holds n
// accepted messages from a legitimate sender.
type sleeper struct {
	relay  *relayProc
	dev    *did.PrivateKey
	sender *did.PrivateKey
	before map[uint64]string
}

// newSleeper starts a relay (extra flags, and an operator), publishes a
// sleeping device the operator admitted and queues n messages from a
// legitimate sender, each answered 503 queued.
func newSleeper(t testing.TB, n int, extra ...string) *sleeper {
	t.Helper()
	op := harnessOperator(t)
	s := &sleeper{relay: startRelay(t, append([]string{"--operator", op.DID().String()}, extra...)...), dev: key(t, 1), sender: key(t, 2)}
	admit(t, s.relay.URL, op, s.dev) // the relay's own bounds, not a new device's probation
	publish(t, s.relay.URL, s.dev, "sleep")
	for i := range n {
		a := send(t, s.relay.URL, s.dev.DID().String(), s.sender, "1.0", message(`"ok-`+string(rune('a'+i))+`"`, wirePart("hello")))
		if a.Status != http.StatusServiceUnavailable || !bytes.Contains(a.Body, []byte(`"queued":true`)) {
			t.Fatalf("legitimate message %d: %s, want 503 queued", i, a)
		}
	}
	s.before = queued(t, s.relay.URL, s.dev)
	if len(s.before) != n {
		t.Fatalf("%d records queued, want %d", len(s.before), n)
	}
	return s
}

// send posts body from sender to the sleeping device.
func (s *sleeper) send(t testing.TB, sender *did.PrivateKey, body string) answer {
	t.Helper()
	return send(t, s.relay.URL, s.dev.DID().String(), sender, "1.0", body)
}

// kept asserts that the accepted messages are still queued unchanged and
// returns what is queued now.
func (s *sleeper) kept(t testing.TB) map[uint64]string {
	t.Helper()
	return assertKept(t, s.relay.URL, s.dev, s.before)
}

// ctl runs the real torporctl with args, in a temporary directory that is
// also its HOME, and returns its stdout, its stderr and its exit error.
func ctl(t testing.TB, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "torporctl"), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+cmd.Dir, "TORPOR_KEY=", "TORPOR_RELAY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

var publishedRE = regexp.MustCompile(`msg="state published"`)

// startAgent runs the real torpor-agent with the key k against relay r in
// mode (extra flags after the defaults: comms:* purposes, every object
// handed to /bin/true) and waits until r logs the state it published.
func startAgent(t testing.TB, r *relayProc, k *did.PrivateKey, mode string, extra ...string) *testenv.Proc {
	t.Helper()
	args := append([]string{"--key", testenv.KeyFile(t, k), "--data-dir", t.TempDir(), "--relay", r.URL, "--mode", mode,
		"--name", "hostile", "--purposes", "comms:*", "--handler", "*=exec:/bin/true"}, extra...)
	p := testenv.Start(t, testenv.Binary(t, "torpor-agent"), args...)
	r.Wait(t, publishedRE, k.DID().String())
	return p
}

// operatorList returns how many records relay r holds for agent, read
// with torporctl queue list as the operator op (the relay must have been
// started with --operator op).
func operatorList(t testing.TB, r *relayProc, op *did.PrivateKey, agent string) int {
	t.Helper()
	out, stderr, err := ctl(t, "queue", "--key", testenv.KeyFile(t, op), "--relay", r.URL, "--agent", agent, "--json", "list")
	var ans struct{ Messages int }
	if err != nil || json.Unmarshal([]byte(out), &ans) != nil {
		t.Fatalf("torporctl queue list: %v\n%s%s", err, out, stderr)
	}
	return ans.Messages
}
