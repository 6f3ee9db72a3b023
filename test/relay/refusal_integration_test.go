//go:build integration

package relay

import (
	"bytes"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestSameAnswerAwakeAndAsleep sends the same plain text message (no
// Governed Object) to a real agent that is awake, which answers it itself
// (runtime/live.go), and to one that sleeps, for which the relay answers
// (transport/relay): both answers are the same, byte for byte, and the
// sleeping agent's relay queued nothing.
func TestSameAnswerAwakeAndAsleep(t *testing.T) {
	p := startRelay(t, t.TempDir())
	awake, asleep, alice := relaytest.Key(t, 3), relaytest.Key(t, 4), relaytest.Key(t, 2)
	awakeAgent(t, p.URL, awake)
	publish(t, p.URL, asleep, "sleep")
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`,
	} {
		version := "1.0"
		if bytes.Contains([]byte(body), []byte("message/send")) {
			version = ""
		}
		s1, b1 := postRaw(t, p.URL, awake, alice, version, body)
		s2, b2 := postRaw(t, p.URL, asleep, alice, version, body)
		if s1 != 200 || s2 != s1 || !bytes.Equal(b1, b2) || !bytes.Contains(b1, []byte(`"code":-32602,"message":"object rejected"`)) {
			t.Errorf("awake: %d %s\nasleep: %d %s\nwant the same 200 -32602 \"object rejected\"", s1, b1, s2, b2)
		}
	}
	if recs := pullAll(t, p.URL, asleep); len(recs) != 0 {
		t.Errorf("%d records queued for the sleeping agent, want none", len(recs))
	}
}

// postRaw posts body to agent's JSON-RPC endpoint with a token of sender.
func postRaw(t *testing.T, url string, agent, sender *did.PrivateKey, version, body string) (int, []byte) {
	t.Helper()
	a := relaytest.Post(t, url, agent.DID().String(), sender, version, body)
	return a.Status, a.Body
}
