package relay

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// TestRefusesWhatTheAgentNeverTakes: a message with nothing an Atom agent
// takes (plain text, a file, data of another media type) is refused at
// enqueue with the answer the awake agent gives (runtime/live.go:
// a2a.ObjectRejected, HTTP 200), never answered queued: true and dropped
// at dequeue. MLS parts, Governed Objects (also in the reference's bare
// shape), messages without parts (vector od-010) and bodies that are not
// submissions are queued as before.
func TestRefusesWhatTheAgentNeverTakes(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "hourly_wake", deviceOpts{})
	mlsWire := `{"data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"` + base64.StdEncoding.EncodeToString(publicMessage([]byte("g"), 1, 1)) + `"}}`
	handshake := `{"data":{"mediaType":"` + a2a.MediaTypeMLSHandshake + `","initiatorDid":"x","welcome":"AAE="}}`
	object := `{"data":{"mediaType":"` + a2a.MediaTypeDataObject + `","object":{}}}`
	bare := `{"mediaType":"` + a2a.MediaTypeDataObject + `","object":{}}`
	tests := []struct {
		name, version, parts string
		kind                 queue.Kind
		refused              bool
	}{
		{"v1.0 text", "1.0", `[{"text":"hello, sleeping agent"}]`, 0, true},
		{"v0.3 text", "", `[{"kind":"text","text":"hello"}]`, 0, true},
		{"file", "1.0", `[{"url":"https://example.org/f","mediaType":"text/plain"}]`, 0, true},
		{"data of another type", "1.0", `[{"data":{"mediaType":"application/json","x":1}}]`, 0, true},
		{"text beside a Governed Object", "1.0", `[{"text":"hi"},` + object + `]`, queue.KindMessage, false},
		{"MLS wire", "1.0", `[` + mlsWire + `]`, queue.KindMessage, false},
		{"MLS handshake", "1.0", `[` + handshake + `]`, queue.KindHandshake, false},
		{"bare Governed Object", "1.0", `[` + bare + `]`, queue.KindMessage, false},
		{"no parts", "1.0", `[]`, queue.KindMessage, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "SendMessage"
			if tt.version == "" {
				method = "message/send"
			}
			body := `{"jsonrpc":"2.0","id":` + string(rune('0'+i)) + `,"method":"` + method + `","params":{"message":{"messageId":"m","role":"user","parts":` + tt.parts + `}}}`
			before := len(h.queued(t, dev.DID()))
			r := h.post(t, dev.DID(), alice, tt.version, body)
			recs := h.queued(t, dev.DID())
			if !tt.refused {
				if r.status != 503 || r.json["queued"] != true || len(recs) != before+1 || recs[len(recs)-1].Kind != tt.kind {
					t.Fatalf("%d %s, %d records; want 503 queued as kind %v", r.status, r.body, len(recs)-before, tt.kind)
				}
				return
			}
			want, _ := json.Marshal(a2a.NewError(json.RawMessage(string(rune('0'+i))), a2a.ObjectRejected()))
			if r.status != 200 || string(r.body) != string(want) || len(recs) != before {
				t.Errorf("%d %s, %d queued; want 200 %s, nothing queued", r.status, r.body, len(recs)-before, want)
			}
		})
	}
}

// plainBody is a SendMessage of one data-object part, messageId id.
func plainBody(id string) string {
	return `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"mediaType":"` + a2a.MediaTypeDataObject + `","data":{"object":{}}}]}}}`
}

// policy sets the card's policy extension to p; nil leaves it out.
func policy(p *a2a.Policy) func(*a2a.Card) {
	return func(c *a2a.Card) {
		if p == nil {
			return
		}
		raw, _ := json.Marshal(p)
		c.Capabilities.Extensions = append(c.Capabilities.Extensions, a2a.Extension{URI: a2a.ExtPolicy, Description: "policy", Params: raw})
	}
}

// TestPlaintextPolicyFollowsTheCard: the relay keeps what a card says of
// plaintext between sends, and reads a new card again: a device that
// changes its policy is answered by the new one at the next send.
func TestPlaintextPolicyFollowsTheCard(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	for i, takes := range []bool{false, false, true, true, false} {
		h.publishOffline(t, dev, "sleep", deviceOpts{card: policy(&a2a.Policy{Plaintext: takes})})
		before := len(h.queued(t, dev.DID()))
		r := h.post(t, dev.DID(), alice, "1.0", plainBody(fmt.Sprintf("p%d", i)))
		queued := len(h.queued(t, dev.DID())) - before
		if takes && (r.status != 503 || queued != 1) || !takes && (r.status != 200 || queued != 0) {
			t.Errorf("send %d, card takes plaintext %v: %d %s, %d queued", i, takes, r.status, r.body, queued)
		}
	}
}

// TestPlaintextPolicy: a device whose signed card says it takes no
// unencrypted Governed Object (a2a.ExtPolicy, plaintext false) has a
// message of only data-object parts refused at enqueue with the answer it
// would give, while an MLS message, a mixed message and a device that
// takes plaintext (or says nothing) are stored as before.
func TestPlaintextPolicy(t *testing.T) {
	plain := plainBody("p")
	mls := `{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"wire":"AAEAAg=="}}`
	mixed := strings.Replace(plain, `]}}}`, `,`+mls+`]}}}`, 1)
	tests := []struct {
		name   string
		policy *a2a.Policy
		body   string
		queued bool
	}{
		{"refuses plaintext: plaintext", &a2a.Policy{Plaintext: false}, plain, false},
		{"refuses plaintext: plaintext and MLS", &a2a.Policy{Plaintext: false}, mixed, true},
		{"takes plaintext", &a2a.Policy{Plaintext: true}, plain, true},
		{"says nothing", nil, plain, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
			h.publishOffline(t, dev, "sleep", deviceOpts{card: policy(tt.policy)})
			r := h.post(t, dev.DID(), alice, "1.0", tt.body)
			n := len(h.queued(t, dev.DID()))
			switch {
			case tt.queued && (r.status != 503 || n != 1):
				t.Errorf("%d %s, %d queued; want 503 and 1 queued", r.status, r.body, n)
			case !tt.queued && (r.status != 200 || string(r.body) != `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"object rejected"}}` || n != 0):
				t.Errorf("%d %s, %d queued; want 200 object rejected and nothing queued", r.status, r.body, n)
			}
		})
	}
}
