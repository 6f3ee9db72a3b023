//go:build integration

package hostile

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// refusal is a request a hostile sender makes to a sleeping device and
// the clear error it must get instead of a queue slot.
type refusal struct {
	name   string
	body   string
	status int
	want   []string // in the answer
}

// hostageRefusals are bodies the device would never acknowledge or never
// take (the queue cannot be held hostage): each is refused at
// once with the JSON-RPC error the device gives, and an id that is not a
// string, a number within range or null is never echoed.
func hostageRefusals() []refusal {
	hs := `{"mediaType":"` + a2a.MediaTypeMLSHandshake + `","data":{"mediaType":"` + a2a.MediaTypeMLSHandshake + `","initiatorDid":"did:key:z6Mk","welcome":"AAE=","ratchetTree":"AAE="}}`
	invalid := func(why string) []string {
		return []string{`"id":null`, `"code":-32600`, why}
	}
	return []refusal{
		{name: "not JSON", body: "one", status: 200, want: []string{`"id":null`, `"code":-32700`, "Parse error"}},
		{name: "empty body", body: "", status: 200, want: []string{`"id":null`, `"code":-32700`}},
		{name: "a batch", body: "[" + message(`1`, wirePart("x")) + "]", status: 200, want: invalid("not a JSON object")},
		{name: "JSON-RPC 1.0", body: strings.Replace(message(`1`, wirePart("x")), `"2.0"`, `"1.0"`, 1), status: 200, want: invalid(`jsonrpc must be`)},
		{name: "method twice smuggles a Welcome", body: strings.Replace(message(`1`, hs), `"method":"SendMessage"`, `"method":"tasks/get","method":"SendMessage"`, 1), status: 200, want: invalid(`duplicate member \"method\"`)},
		{name: "parts twice", body: strings.Replace(message(`1`, hs), `"parts":[`, `"parts":[],"parts":[`, 1), status: 200, want: invalid(`duplicate member \"parts\"`)},
		{name: "duplicate spelt with an escape", body: strings.Replace(message(`1`, wirePart("x")), `"role"`, `"r\u006fle":"x","role"`, 1), status: 200, want: invalid(`duplicate member \"role\"`)},
		{name: "duplicate inside a part", body: message(`1`, `{"mediaType":"a","mediaType":"`+a2a.MediaTypeMLSWire+`","data":{"wire":"AAE="}}`), status: 200, want: invalid(`duplicate member \"mediaType\"`)},
		{name: "nested deeper than the device reads", body: message(`1`, `{"mediaType":"`+a2a.MediaTypeMLSWire+`","data":{"wire":"AAE=","x":`+strings.Repeat("[", 80)+strings.Repeat("]", 80)+`}}`), status: 200, want: invalid("nested deeper than 64")},
		{name: "id out of range", body: message(`1e400`, wirePart("x")), status: 200, want: invalid("number outside the IEEE 754 double range")},
		{name: "id an object", body: message(`{"x":"<script>"}`, wirePart("x")), status: 200, want: invalid("id must be")},
		{name: "id an array", body: message(`[1,2]`, wirePart("x")), status: 200, want: invalid("id must be")},
		{name: "plain text", body: message(`"t"`, `{"text":"hello"}`), status: 200, want: []string{`"id":"t"`, `"code":-32602`, "object rejected"}},
		{name: "media types that conflict", body: message(`"c"`, `{"mediaType":"`+a2a.MediaTypeMLSWire+`","data":{"mediaType":"`+a2a.MediaTypeDataObject+`","wire":"AAE="}}`), status: 200, want: []string{`"code":-32602`, "object rejected"}},
		{name: "a read is not stored", body: `{"jsonrpc":"2.0","id":"r","method":"GetTask","params":{"id":"t1"}}`, status: 503, want: []string{`"queued":false`, "agent_asleep"}},
		{name: "the other version's method", body: strings.Replace(message(`"v"`, wirePart("x")), "SendMessage", "message/send", 1), status: 400, want: []string{`"code":-32601`, "not an A2A 1.0 method"}},
	}
}

// TestRelayQueue: a hostile sender against a sleeping device's queue.
// Every case checks that the device's accepted messages are all still
// there, unchanged, and that nothing was added.
func TestRelayQueue(t *testing.T) {
	s := newSleeper(t, 2)
	mallory := freshKey(t)
	for _, rc := range hostageRefusals() {
		t.Run(rc.name, func(t *testing.T) {
			a := s.send(t, mallory, rc.body)
			if a.Status != rc.status {
				t.Errorf("got %s, want %d", a, rc.status)
			}
			for _, w := range rc.want {
				if !bytes.Contains(a.Body, []byte(w)) {
					t.Errorf("answer %s lacks %s", a.Body, w)
				}
			}
			if now := s.kept(t); len(now) != len(s.before) {
				t.Errorf("%d records queued, want %d", len(now), len(s.before))
			}
		})
	}
	t.Run("no token is not queued", func(t *testing.T) {
		a := send(t, s.relay.URL, s.dev.DID().String(), nil, "1.0", message(`1`, wirePart("x")))
		if a.Status != http.StatusUnauthorized || a.JSON()["error"] != "asleep_enqueue_requires_auth" {
			t.Errorf("got %s, want 401 asleep_enqueue_requires_auth", a)
		}
		if now := s.kept(t); len(now) != len(s.before) {
			t.Errorf("%d records queued, want %d", len(now), len(s.before))
		}
	})
	t.Run("body over the size limit", func(t *testing.T) {
		a := s.send(t, mallory, message(`2`, wirePart(strings.Repeat("x", 300<<10))))
		if a.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(a.Body), "message_too_large") {
			t.Errorf("got %s, want 413 message_too_large", a)
		}
		if now := s.kept(t); len(now) != len(s.before) {
			t.Errorf("%d records queued, want %d", len(now), len(s.before))
		}
	})
}

// TestRelayQueueNotHostage is the finding itself: one free DID sends as
// many bodies the device would never acknowledge as it likes, each the
// size the relay allows; none takes a slot, so the next sender's
// message and an MLS Welcome are still queued.
func TestRelayQueueNotHostage(t *testing.T) {
	s := newSleeper(t, 1, "--max-messages", "4", "--max-per-peer", "4")
	mallory, bob := freshKey(t), key(t, 3)
	pad := strings.Repeat("x", 200<<10)
	for i, body := range []string{
		`"` + pad + `"`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"SendMessage","params":{"message":{"parts":[` + welcomePart() + `]},"pad":"` + pad + `"}}`,
		message(`2`, `{"text":"`+pad+`"}`),
		message(`3`, wirePart("x"), `{"pad":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`),
		message(`4`, `{"mediaType":"application/json","data":{"pad":"`+pad+`"}}`),
		`{"pad":"` + pad + `"}`,
	} {
		if a := s.send(t, mallory, body); a.Status != http.StatusOK || a.JSON()["error"] == nil {
			t.Errorf("hostile body %d: %s, want 200 with a JSON-RPC error", i, a)
		}
	}
	if a := s.send(t, bob, message(`"bob"`, wirePart("hello"))); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Errorf("bob's message: %s, want 503 queued", a)
	}
	if a := s.send(t, bob, message(`"welcome"`, welcomePart())); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Errorf("a Welcome: %s, want 503 queued", a)
	}
	if now := s.kept(t); len(now) != len(s.before)+2 {
		t.Errorf("%d records queued, want %d", len(now), len(s.before)+2)
	}
}

// TestUnknownAgentsAnswerAlike: without a token, a relay answers for an
// agent it serves, asleep or awake, exactly as for one it never heard of
// (/a/{did} once told unknown agents apart before authentication).
func TestUnknownAgentsAnswerAlike(t *testing.T) {
	s := newSleeper(t, 1)
	awake := key(t, 4)
	publish(t, s.relay.URL, awake, "always_on")
	known := send(t, s.relay.URL, s.dev.DID().String(), nil, "1.0", message(`1`, wirePart("x")))
	for name, agent := range map[string]string{
		"awake agent":           awake.DID().String(),
		"unknown agent":         freshKey(t).DID().String(),
		"unknown, bad token":    freshKey(t).DID().String(),
		"sleeping, stale token": s.dev.DID().String(),
	} {
		t.Run(name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}, "A2A-Version": {"1.0"}}
			if strings.Contains(name, "token") {
				h.Set("Authorization", "Bearer "+relaytest.Token(t, freshKey(t), "https://elsewhere.example"))
			}
			a := do(t, "POST", s.relay.URL+"/a/"+agent+"/a2a/jsonrpc", h, []byte(message(`1`, wirePart("x"))))
			known := known
			if strings.Contains(name, "token") {
				// The 401 names why the token was refused: compare
				// with the known agent's answer to the same token.
				known = do(t, "POST", s.relay.URL+"/a/"+s.dev.DID().String()+"/a2a/jsonrpc", h, []byte(message(`1`, wirePart("x"))))
			}
			if a.Status != known.Status || a.JSON()["error"] != known.JSON()["error"] || a.JSON()["message"] != known.JSON()["message"] {
				t.Errorf("got %s, want the known agent's %s", a, known)
			}
			if a.Header.Get("Content-Type") != known.Header.Get("Content-Type") {
				t.Errorf("Content-Type %q, want %q", a.Header.Get("Content-Type"), known.Header.Get("Content-Type"))
			}
		})
	}
	s.kept(t)
}

// TestRealAgentAnswersAlike runs two real torpor-agents (without
// allowPlaintext): one awake, one asleep. An unencrypted Governed Object
// and a body with a member twice get the same answer from both, the
// awake agent's own and its relay's for the sleeping one, whose card
// says it takes no plaintext; nothing is stored for the sleeping agent.
func TestRealAgentAnswersAlike(t *testing.T) {
	op := key(t, 9)
	r := startRelay(t, "--operator", op.DID().String())
	awake, asleep, alice := key(t, 5), key(t, 6), key(t, 7)
	startAgent(t, r, awake, "always_on")
	startAgent(t, r, asleep, "sleep")
	obj := `{"mediaType":"` + a2a.MediaTypeDataObject + `","data":{"mediaType":"` + a2a.MediaTypeDataObject + `","object":{"id":"o1"}}}`
	for name, body := range map[string]string{
		"plaintext object": message(`"p"`, obj),
		"method twice":     strings.Replace(message(`"d"`, wirePart("x")), `"method":`, `"method":"GetTask","method":`, 1),
		"not JSON":         `{"jsonrpc":`,
	} {
		t.Run(name, func(t *testing.T) {
			a1 := send(t, r.URL, awake.DID().String(), alice, "1.0", body)
			a2 := send(t, r.URL, asleep.DID().String(), alice, "1.0", body)
			if a1.Status != 200 || a2.Status != a1.Status || !bytes.Equal(a1.Body, a2.Body) || a1.JSON()["error"] == nil {
				t.Errorf("awake: %s\nasleep: %s\nwant the same 200 JSON-RPC error", a1, a2)
			}
			if n := operatorList(t, r, op, asleep.DID().String()); n != 0 {
				t.Errorf("%d records stored for the sleeping agent", n)
			}
		})
	}
}

// TestRelayQueuePeerBytes: one DID's large messages, each one the device
// takes, hold at most --max-peer-bytes of the queue (429, kind peer);
// the next sender is still queued and nothing accepted is lost.
func TestRelayQueuePeerBytes(t *testing.T) {
	s := newSleeper(t, 1)
	mallory, bob := freshKey(t), key(t, 3)
	big := wirePart(strings.Repeat("m", 150<<10)) // 200 KiB in base64
	for i, want := range []int{503, 503, 429} {
		a := s.send(t, mallory, message(`"big-`+string(rune('a'+i))+`"`, big))
		if a.Status != want || (want == 429 && (a.JSON()["kind"] != "peer" || a.JSON()["queued"] != false)) {
			t.Errorf("mallory's message %d: %s, want %d", i, a, want)
		}
	}
	if a := s.send(t, bob, message(`"bob"`, wirePart("hello"))); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Errorf("bob's message: %s, want 503 queued", a)
	}
	if now := s.kept(t); len(now) != len(s.before)+3 {
		t.Errorf("%d records queued, want %d", len(now), len(s.before)+3)
	}
}

// TestRelayQueueReserveNotSmuggled: with the queue full of accepted
// messages, a body with "method" twice whose parts hold a Welcome is
// refused (it is no handshake to the device), so it cannot take the
// handshake reserve; a real Welcome still can.
func TestRelayQueueReserveNotSmuggled(t *testing.T) {
	s := newSleeper(t, 2, "--max-messages", "2", "--handshake-reserve-messages", "1")
	mallory, bob := freshKey(t), key(t, 3)
	if a := s.send(t, bob, message(`"full"`, wirePart("x"))); a.Status != http.StatusInsufficientStorage {
		t.Fatalf("a message to the full queue: %s, want 507", a)
	}
	smuggled := strings.Replace(message(`"w"`, welcomePart()), `"method":"SendMessage"`, `"method":"GetTask","method":"SendMessage"`, 1)
	if a := s.send(t, mallory, smuggled); a.Status != http.StatusOK || !bytes.Contains(a.Body, []byte(`duplicate member \"method\"`)) {
		t.Errorf("smuggled Welcome: %s, want 200 -32600 duplicate member", a)
	}
	if a := s.send(t, bob, message(`"welcome"`, welcomePart())); a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
		t.Errorf("a real Welcome: %s, want 503 queued in the reserve", a)
	}
	if now := s.kept(t); len(now) != len(s.before)+1 {
		t.Errorf("%d records queued, want %d", len(now), len(s.before)+1)
	}
}
