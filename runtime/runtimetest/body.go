package runtimetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Key returns the test identity whose RFC 8032 seed is 31 zero bytes then
// last (1 is the vectors' Alice, 2 their Bob): didtest.Key.
func Key(t testing.TB, last byte) *did.PrivateKey { t.Helper(); return didtest.Key(t, last) }

// Body returns a queued JSON-RPC body (A2A v1.0 SendMessage) carrying
// parts, as the relay stores it.
func Body(t testing.TB, parts ...a2a.Part) []byte {
	t.Helper()
	return Send(t, a2a.NewUserMessage(fmt.Sprintf("m-%d", len(parts)), "", parts...))
}

// Send returns a queued JSON-RPC body (A2A v1.0 SendMessage) carrying m,
// as the relay stores it.
func Send(t testing.TB, m a2a.Message) []byte {
	t.Helper()
	req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Object signs a Governed Object. Zero ttl means no declared expiry.
func Object(t testing.TB, k *did.PrivateKey, purpose string, issued time.Time, ttl time.Duration, payload any) []byte {
	t.Helper()
	if payload == nil {
		payload = map[string]any{"text": "hello"}
	}
	o, err := governed.Sign(k, governed.Template{
		IssuedAt: issued, Semantic: governed.Semantic{Schema: "https://atom.qwixl.dev/schema/CommsMessage"},
		Payload: payload, Purpose: purpose, TTL: ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DataPart returns an unencrypted Governed Object part.
func DataPart(t testing.TB, obj []byte) a2a.Part {
	t.Helper()
	p, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ObjectID returns the id of the Governed Object obj.
func ObjectID(t testing.TB, obj []byte) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(obj, &v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// Tamper returns obj with its payload replaced after signing, so that its
// signature no longer verifies.
func Tamper(obj []byte) []byte {
	var m map[string]json.RawMessage
	json.Unmarshal(obj, &m)
	m["payload"] = json.RawMessage(`{"text":"tampered"}`)
	b, _ := json.Marshal(m)
	return b
}
