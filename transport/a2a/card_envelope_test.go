package a2a

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCardEnvelopeExtension: a card built with Envelope declares
// ExtEnvelope with the params given, its entry passes
// ValidateEnvelopeExtension and reads back through Card.Envelope; a card
// without it declares nothing.
func TestCardEnvelopeExtension(t *testing.T) {
	c := mustBuild(t, CardOptions{Name: "a", BaseURL: "https://relay.example/a/did:key:z6Mk", OfflineMode: "sleep", Envelope: DefaultEnvelopeParams()})
	e, ok := c.Extension(ExtEnvelope)
	if !ok {
		t.Fatalf("card extensions %+v lack %s", c.Capabilities.Extensions, ExtEnvelope)
	}
	raw, _ := json.Marshal(e)
	if err := ValidateEnvelopeExtension(raw); err != nil {
		t.Fatalf("entry %s: %v", raw, err)
	}
	want := `{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":8}`
	if string(e.Params) != want || e.Required {
		t.Errorf("entry %s; want params %s, required false", raw, want)
	}
	if len(raw) > 320 {
		t.Errorf("entry is %d bytes; the card is re-sent on every wake, keep it under 320", len(raw))
	}
	p, ok, err := c.Envelope()
	if err != nil || !ok || !cmp.Equal(p, *DefaultEnvelopeParams()) {
		t.Errorf("Envelope() = %+v, %v, %v", p, ok, err)
	}
	if _, ok, err := mustBuild(t, CardOptions{Name: "a", BaseURL: "https://x"}).Envelope(); ok || err != nil {
		t.Errorf("a card without the entry: Envelope() ok %v, err %v", ok, err)
	}
	if _, err := BuildCard(CardOptions{Name: "a", BaseURL: "https://x", Envelope: &EnvelopeParams{Scope: EnvelopeScopeV0}}); !errors.Is(err, ErrExtensionSchema) {
		t.Errorf("BuildCard with empty proofs: err = %v, want ErrExtensionSchema", err)
	}
}

// TestValidateEnvelopeExtension refuses entries that break the params'
// shape.
func TestValidateEnvelopeExtension(t *testing.T) {
	entry := func(params string) string {
		return `{"uri":"` + ExtEnvelope + `","description":"d","required":false,"params":` + params + `}`
	}
	good := `{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":3}`
	tests := []struct {
		name, raw string
		ok        bool
	}{
		{"good", entry(good), true},
		{"no params", `{"uri":"` + ExtEnvelope + `","description":"d","required":false}`, false},
		{"required true", `{"uri":"` + ExtEnvelope + `","description":"d","required":true,"params":` + good + `}`, false},
		{"other uri", `{"uri":"` + ExtPolicy + `","description":"d","required":false,"params":` + good + `}`, false},
		{"extra member", entry(`{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":3,"x":1}`), false},
		{"missing maxChain", entry(`{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"]}`), false},
		{"maxChain 0", entry(`{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":0}`), false},
		{"maxChain fraction", entry(`{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":1.5}`), false},
		{"empty proofs", entry(`{"scope":"lap-scope-v0","proofs":[],"algorithms":["EdDSA"],"maxChain":3}`), false},
		{"proofs not a list", entry(`{"scope":"lap-scope-v0","proofs":"jws-compact","algorithms":["EdDSA"],"maxChain":3}`), false},
		{"empty algorithm", entry(`{"scope":"lap-scope-v0","proofs":["jws-compact"],"algorithms":[""],"maxChain":3}`), false},
		{"null scope", entry(`{"scope":null,"proofs":["jws-compact"],"algorithms":["EdDSA"],"maxChain":3}`), false},
	}
	for _, tt := range tests {
		err := ValidateEnvelopeExtension([]byte(tt.raw))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrExtensionSchema)) {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
