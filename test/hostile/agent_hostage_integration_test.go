//go:build integration

package hostile

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// maxDeferrals and causeUndeliverable are runtime/drain's
// DefaultMaxDeferrals and CauseMLSUndeliverable, spelt out so that the case
// builds (and fails) against the agent before them.
const (
	maxDeferrals       = 3
	causeUndeliverable = "mls-undeliverable"
)

// strangerPart is an mls-wire part whose MLSMessage is a PrivateMessage
// (RFC 9420, Section 6.3) of a made-up group: building one needs no key,
// and the device never joined the group.
func strangerPart(t *testing.T) string {
	t.Helper()
	group, junk := make([]byte, 16), make([]byte, 48)
	rand.Read(group)
	rand.Read(junk)
	m := &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatPrivateMessage, PrivateMessage: &mls.PrivateMessage{
		GroupID: group, Epoch: 1, ContentType: mls.ContentTypeApplication, EncryptedSenderData: junk[:16], Ciphertext: junk[16:]}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mls.ParseMLSMessage(b); err != nil {
		t.Fatalf("the fixture does not parse: %v", err)
	}
	return `{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"` +
		base64.StdEncoding.EncodeToString(b) + `"}}`
}

// TestAgentStrangerGroupsNotHostage: free DIDs queue MLS messages for
// groups the device never joined. The real torpor-agent defers them at
// maxDeferrals-1 wakes (restarts in between: the count is in
// agent.db) and at the next acknowledges them, each logged with cause
// mls-undeliverable; the relay holds none of them afterwards.
func TestAgentStrangerGroupsNotHostage(t *testing.T) {
	r := startRelay(t)
	dev := key(t, 50)
	d := agNewDevice(t)
	d.key = testenv.KeyFile(t, dev)
	args := []string{"--config", d.config, "--key", d.key, "--data-dir", d.data, "--relay", r.URL, "--mode", "sleep",
		"--purposes", "comms:*", "--handler", "comms:*=exec:/bin/true"}
	agent := testenv.Start(t, agBinary(t), args...)
	agent.Wait(t, wakeRE) // booted, published its card, asleep
	agent.Stop()
	const junk = 4
	for i := range junk {
		if a := send(t, r.URL, dev.DID().String(), freshKey(t), "1.0", message(`"junk-`+string(rune('a'+i))+`"`, strangerPart(t))); a.Status != http.StatusServiceUnavailable {
			t.Fatalf("junk %d: %s, want 503 queued", i, a)
		}
	}
	for wake := 1; wake < maxDeferrals; wake++ {
		agent = testenv.Start(t, agBinary(t), args...)
		if m := agent.Wait(t, wakeRE); m[1] != "4" || m[2] != "0" || m[3] != "4" {
			t.Fatalf("wake %d drained records=%s acked=%s deferred=%s, want 4 0 4", wake, m[1], m[2], m[3])
		}
		agent.Stop()
	}
	agent = testenv.Start(t, agBinary(t), args...)
	if m := agent.Wait(t, wakeRE); m[1] != "4" || m[2] != "4" || m[3] != "0" {
		t.Fatalf("wake %d drained records=%s acked=%s deferred=%s, want 4 4 0: dropped", maxDeferrals, m[1], m[2], m[3])
	}
	if n := agent.Count(regexp.MustCompile(`msg="record rejected or deferred"`), "cause="+causeUndeliverable); n != junk {
		t.Errorf("%d records logged %s, want %d:\n%s", n, causeUndeliverable, junk, agent.Log())
	}
	agent.Stop()
	if left := queued(t, r.URL, dev); len(left) != 0 {
		t.Fatalf("the relay still holds %d records", len(left))
	}
}

// fakeCommitPart is an mls-wire part whose MLSMessage the relay reads as a
// PublicMessage Commit (RFC 9420, Section 6.2: a handshake, which may use
// the reserve) of a made-up group: its prefix is well formed, the rest is
// junk no member could process.
func fakeCommitPart(t *testing.T) string {
	t.Helper()
	b := []byte{0, 1, 0, 1, 4, 'j', 'u', 'n', 'k', 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 3}
	junk := make([]byte, 32)
	rand.Read(junk)
	return `{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"` +
		base64.StdEncoding.EncodeToString(append(b, junk...)) + `"}}`
}

// TestRelayDeferredSenderNoReserve: a free DID's fake Commit takes a slot
// of the handshake reserve of a device whose queue is full; the device's
// link delivers it and the device leaves it unacknowledged (deferred).
// The same sender's next fake Commit is then an ordinary message, refused
// by the full queue (507), and another sender's Welcome still finds the
// reserve (503 queued): one sender's junk costs its own allowance, not the
// reserve others need.
func TestRelayDeferredSenderNoReserve(t *testing.T) {
	s := newSleeper(t, 2, "--max-messages", "2", "--handshake-reserve-messages", "2")
	mallory, bob := freshKey(t), key(t, 3)
	if a := s.send(t, mallory, message(`"c1"`, fakeCommitPart(t))); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Fatalf("the first fake Commit: %s, want 503 queued in the reserve", a)
	}
	linkDown := regexp.MustCompile(`msg="link down"`)
	links := s.relay.Count(linkDown, s.dev.DID().String())
	if n := len(pullAll(t, s.relay.URL, s.dev)); n != 3 { // delivered, none acknowledged: deferred
		t.Fatalf("the device was delivered %d records, want 3", n)
	}
	within(t, 10*time.Second, "the relay to log the link's end", func() bool { return s.relay.Count(linkDown, s.dev.DID().String()) > links })
	if a := s.send(t, mallory, message(`"c2"`, fakeCommitPart(t))); a.Status != http.StatusInsufficientStorage {
		t.Fatalf("the deferred sender's second fake Commit: %s, want 507: no reserve for it", a)
	}
	if a := s.send(t, bob, message(`"welcome"`, welcomePart())); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Errorf("another sender's Welcome: %s, want 503 queued in the reserve", a)
	}
	if now := s.kept(t); len(now) != len(s.before)+2 {
		t.Errorf("%d records queued, want %d: the accepted ones, the first fake Commit and the Welcome", len(now), len(s.before)+2)
	}
}
