package a2a

import (
	"encoding/json"
	"testing"
)

// TestCardPolicy: BuildCard publishes Policy in ExtPolicy, Card.Policy
// reads it back and refuses unknown members, and RefusesPlaintext is true
// only for a card that says plaintext false.
func TestCardPolicy(t *testing.T) {
	build := func(p *Policy) []byte {
		c, err := BuildCard(CardOptions{Name: "n", BaseURL: "https://relay.example/a/did:key:z6Mk", Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		return b
	}
	for _, tt := range []struct {
		name    string
		raw     []byte
		refuses bool
	}{
		{"plaintext false", build(&Policy{Plaintext: false}), true},
		{"plaintext true", build(&Policy{Plaintext: true}), false},
		{"no policy", build(nil), false},
		{"not a card", []byte("{"), false},
	} {
		if got := RefusesPlaintext(tt.raw); got != tt.refuses {
			t.Errorf("%s: RefusesPlaintext = %v, want %v", tt.name, got, tt.refuses)
		}
	}
	c, _ := ParseCard(build(&Policy{Plaintext: true}))
	if p, ok, err := c.Policy(); !ok || err != nil || !p.Plaintext {
		t.Errorf("Policy() = %+v %v %v", p, ok, err)
	}
	for i := range c.Capabilities.Extensions {
		if c.Capabilities.Extensions[i].URI == ExtPolicy {
			c.Capabilities.Extensions[i].Params = json.RawMessage(`{"plaintext":false,"other":1}`)
		}
	}
	if _, ok, err := c.Policy(); !ok || err == nil {
		t.Errorf("unknown member: ok %v err %v, want a schema error", ok, err)
	}
	b, _ := json.Marshal(c)
	if RefusesPlaintext(b) {
		t.Error("a policy that cannot be read refuses plaintext")
	}
}
