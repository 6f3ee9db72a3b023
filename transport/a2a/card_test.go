package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

func mustBuild(tb testing.TB, o CardOptions) *Card {
	tb.Helper()
	c, err := BuildCard(o)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestBuildCardExtensions(t *testing.T) {
	bounds := &queuebounds.Bounds{MaxMessages: 500, MaxBytes: 2 << 20, MaxPerPeer: 50, TTL: 604800 * time.Second, MaxMessageSize: 256 << 10, HandshakeMessages: 16, HandshakeBytes: 256 << 10}
	tests := []struct {
		name     string
		mode     string
		bounds   *queuebounds.Bounds
		wantURIs []string
		wantMode string
	}{
		{"sleep", "sleep", bounds, []string{ExtDataObject, ExtOfflineDelivery, ExtQueueBounds}, "sleep"},
		{"hourly", "hourly_wake", nil, []string{ExtDataObject, ExtOfflineDelivery}, "hourly_wake"},
		{"always on", "always_on", bounds, []string{ExtDataObject, ExtQueueBounds}, ""},
		{"session", "session", nil, []string{ExtDataObject}, ""},
		{"unset", "", nil, []string{ExtDataObject}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, CardOptions{Name: "a", BaseURL: "https://relay.example/a/did:key:z6Mk/", OfflineMode: tt.mode, Bounds: tt.bounds})
			var uris []string
			for _, e := range c.Capabilities.Extensions {
				uris = append(uris, e.URI)
				raw, _ := json.Marshal(e)
				switch e.URI {
				case ExtDataObject:
					if err := ValidateDataObjectExtension(raw); err != nil {
						t.Errorf("data-object entry %s: %v", raw, err)
					}
				case ExtOfflineDelivery:
					if err := ValidateOfflineDeliveryExtension(raw); err != nil {
						t.Errorf("offline-delivery entry %s: %v", raw, err)
					}
				}
			}
			if diff := cmp.Diff(tt.wantURIs, uris); diff != "" {
				t.Errorf("extensions (-want +got):\n%s", diff)
			}
			if got := c.OfflineMode(); got != tt.wantMode {
				t.Errorf("OfflineMode() = %q, want %q", got, tt.wantMode)
			}
			got, ok, err := c.QueueBounds()
			if err != nil || ok != (tt.bounds != nil) || (ok && got != *tt.bounds) {
				t.Errorf("QueueBounds() = %+v, %v, %v; want %+v", got, ok, err, tt.bounds)
			}
			if n := len(c.SupportedInterfaces); n != 2 || c.SupportedInterfaces[0].ProtocolVersion != "1.0" || c.SupportedInterfaces[1].ProtocolVersion != "0.3" {
				t.Errorf("interfaces = %+v", c.SupportedInterfaces)
			}
			if u := c.SupportedInterfaces[0].URL; u != "https://relay.example/a/did:key:z6Mk/a2a/jsonrpc" {
				t.Errorf("interface URL = %q", u)
			}
		})
	}
	if _, err := BuildCard(CardOptions{Name: "a", BaseURL: "https://x", OfflineMode: "nap"}); err == nil {
		t.Error("BuildCard with mode nap: no error")
	}
	if _, err := BuildCard(CardOptions{BaseURL: "https://x"}); err == nil {
		t.Error("BuildCard without name: no error")
	}
}

func TestCardWireShape(t *testing.T) {
	c := mustBuild(t, CardOptions{Name: "n", BaseURL: "https://r.example/a/d", OfflineMode: "sleep"})
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	ss := m["securitySchemes"].(map[string]any)["atomDidBearer"].(map[string]any)["httpAuthSecurityScheme"].(map[string]any)
	if ss["scheme"] != "Bearer" || ss["bearerFormat"] != "AtomDID" {
		t.Errorf("security scheme = %v", ss)
	}
	req := m["securityRequirements"].([]any)[0].(map[string]any)["schemes"].(map[string]any)["atomDidBearer"].(map[string]any)
	if l, ok := req["list"].([]any); !ok || len(l) != 0 {
		t.Errorf("security requirement = %v, want list []", req)
	}
	for _, e := range m["capabilities"].(map[string]any)["extensions"].([]any) {
		e := e.(map[string]any)
		if e["uri"] == ExtDataObject {
			if _, has := e["params"]; has {
				t.Errorf("data-object entry has params: %v", e)
			}
		}
	}
}

func TestSignVerifyCard(t *testing.T) {
	alice, bob := didtest.Key(t, 1), didtest.Key(t, 2)
	c := mustBuild(t, CardOptions{Name: "alice", BaseURL: "https://r.example/a/" + alice.DID().String(), OfflineMode: "hourly_wake"})
	raw, err := SignCard(c, alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyCard(raw, alice.DID()); err != nil {
		t.Fatalf("VerifyCard(own card) = %v", err)
	}
	// Header per RFC 7515/8037 as the reference writes it.
	var sig struct {
		Signatures []CardSignature `json:"signatures"`
	}
	json.Unmarshal(raw, &sig)
	h, _ := b64url.DecodeString(sig.Signatures[0].Protected)
	if want := `{"alg":"EdDSA","kid":"` + alice.DID().String() + `","typ":"JOSE"}`; string(h) != want {
		t.Errorf("protected header = %s, want %s", h, want)
	}
	// Reformatting the JSON (whitespace, member order) does not matter:
	// the signature is over the canonical form.
	var anyv map[string]any
	json.Unmarshal(raw, &anyv)
	pretty, _ := json.MarshalIndent(anyv, "", "  ")
	if err := VerifyCard(pretty, alice.DID()); err != nil {
		t.Errorf("VerifyCard(reformatted) = %v", err)
	}

	tests := []cardVerifyCase{
		{"other agent", raw, bob.DID(), ErrCardUnsigned},
		{"tampered", bytes.Replace(raw, []byte(`"alice"`), []byte(`"mallory"`), 1), alice.DID(), ErrCardSignature},
		{"tampered mode", bytes.Replace(raw, []byte(`hourly_wake`), []byte(`sleep`), 1), alice.DID(), ErrCardSignature},
		{"unsigned", mustJSON(t, mustBuild(t, CardOptions{Name: "alice", BaseURL: "https://x"})), alice.DID(), ErrCardUnsigned},
		{"not json", []byte("{"), alice.DID(), ErrCardMalformed},
		{"duplicate member", []byte(`{"name":"a","name":"b","signatures":[]}`), alice.DID(), ErrCardMalformed},
		{"bad signatures", []byte(`{"name":"a","signatures":{}}`), alice.DID(), ErrCardMalformed},
	}
	tests = append(tests, cardVerifyCase{"signed by bob with alice kid", forgedCard(t, alice, bob), alice.DID(), ErrCardSignature})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyCard(tt.raw, tt.agent)
			if !errors.Is(err, tt.want) {
				t.Errorf("VerifyCard = %v, want %v", err, tt.want)
			}
		})
	}
}

type cardVerifyCase struct {
	name  string
	raw   []byte
	agent did.DID
	want  error
}

// forgedCard returns a card that signer signed claiming claimed's kid.
func forgedCard(t *testing.T, claimed, signer *did.PrivateKey) []byte {
	t.Helper()
	forged := mustBuild(t, CardOptions{Name: "alice", BaseURL: "https://x"})
	fs, err := signDetached(mustJSON(t, forged), signer)
	if err != nil {
		t.Fatal(err)
	}
	fh, _ := json.Marshal(jwsHeader{Alg: "EdDSA", Kid: claimed.DID().String(), Typ: "JOSE"})
	fs.Protected = b64url.EncodeToString(fh)
	forged.Signatures = []CardSignature{fs}
	return mustJSON(t, forged)
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestExtensionVectors runs the reference's card-od-00[1-6] entries and
// extension examples through the schema checks.
func TestExtensionVectors(t *testing.T) {
	dir := "../../testdata/vectors/atom"
	files, _ := filepath.Glob(filepath.Join(dir, "offline-delivery", "card-od-00*.json"))
	n := 0
	for _, f := range files {
		var v struct {
			ID        string          `json:"id"`
			Kind      string          `json:"kind"`
			Extension json.RawMessage `json:"extension"`
			Expect    struct {
				SchemaOk bool `json:"schemaOk"`
			} `json:"expect"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, &v)
		if v.Kind != "agent-card-extension" {
			continue
		}
		n++
		err = ValidateOfflineDeliveryExtension(v.Extension)
		if (err == nil) != v.Expect.SchemaOk {
			t.Errorf("%s: ValidateOfflineDeliveryExtension = %v, want ok=%v", v.ID, err, v.Expect.SchemaOk)
		}
	}
	if n != 6 {
		t.Errorf("ran %d card-od extension vectors, want 6", n)
	}
	for _, f := range []string{"card-extension-sleep.json", "card-extension-hourly-wake.json"} {
		b, err := os.ReadFile(filepath.Join(dir, "extension-examples/offline-delivery-v1/examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateOfflineDeliveryExtension(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	extra := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"extra params member", `{"uri":"` + ExtOfflineDelivery + `","description":"d","required":false,"params":{"mode":"sleep","maxMessages":1}}`, false},
		{"empty description", `{"uri":"` + ExtOfflineDelivery + `","description":"","required":false,"params":{"mode":"sleep"}}`, false},
		{"required null", `{"uri":"` + ExtOfflineDelivery + `","description":"d","required":null,"params":{"mode":"sleep"}}`, false},
		{"params not object", `{"uri":"` + ExtOfflineDelivery + `","description":"d","required":false,"params":"sleep"}`, false},
	}
	for _, tt := range extra {
		if err := ValidateOfflineDeliveryExtension([]byte(tt.raw)); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if err := ValidateDataObjectExtension([]byte(`{"uri":"` + ExtDataObject + `","description":"d","required":false,"params":{}}`)); err == nil || !strings.Contains(err.Error(), "params") {
		t.Errorf("data-object entry with params: err = %v", err)
	}
}

// TestCardV03 checks the A2A 0.3 view of a signed card: the 0.3 interface
// as url, the DID Bearer scheme as OpenAPI's http bearer scheme, security
// as 0.3 writes it, the extensions kept, and no signature.
func TestCardV03(t *testing.T) {
	key := didtest.Key(t, 1)
	base := "https://r.example/a/" + key.DID().String()
	raw, err := SignCard(mustBuild(t, CardOptions{Name: "n", BaseURL: base, OfflineMode: "sleep"}), key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := CardV03(raw)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatal(err)
	}
	if m["url"] != base+JSONRPCPath || m["preferredTransport"] != "JSONRPC" || m["protocolVersion"] != "0.3.0" {
		t.Errorf("url %v, preferredTransport %v, protocolVersion %v", m["url"], m["preferredTransport"], m["protocolVersion"])
	}
	ss, _ := m["securitySchemes"].(map[string]any)[SecuritySchemeDIDBearer].(map[string]any)
	if ss["type"] != "http" || ss["scheme"] != "bearer" || ss["bearerFormat"] != BearerFormatDID ||
		!strings.Contains(ss["description"].(string), "docs/a2a.md") {
		t.Errorf("security scheme = %v", ss)
	}
	if sec, _ := json.Marshal(m["security"]); string(sec) != `[{"atomDidBearer":[]}]` {
		t.Errorf("security = %s", sec)
	}
	if _, has := m["signatures"]; has {
		t.Error("the 0.3 view carries the 1.0 card's signature")
	}
	if exts := m["capabilities"].(map[string]any)["extensions"].([]any); len(exts) != 2 {
		t.Errorf("extensions = %v, want data-object and offline-delivery", exts)
	}
	if _, err := CardV03([]byte(`{"name":"n","supportedInterfaces":[]}`)); err == nil {
		t.Error("CardV03 of a card without a 0.3 interface: no error")
	}
}

func TestWantsCardV03(t *testing.T) {
	for v, want := range map[string]bool{"": true, " ": true, "0.3": true, "0.2.5": true, "1.0": false, "1.1": false, "2": false} {
		if got := WantsCardV03(v); got != want {
			t.Errorf("WantsCardV03(%q) = %v", v, got)
		}
	}
}

// TestCardV03Lists: the lists 0.3 requires are [] in the view, never null,
// for a card that left them out.
func TestCardV03Lists(t *testing.T) {
	v, err := CardV03([]byte(`{"name":"n","supportedInterfaces":[{"url":"https://r/a/d/a2a/jsonrpc","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"defaultInputModes":[]`, `"defaultOutputModes":[]`, `"skills":[]`} {
		if !strings.Contains(string(v), want) {
			t.Errorf("view %s lacks %s", v, want)
		}
	}
}

// BenchmarkCardV03 is the relay's cost of a 0.3 client's card request
// beyond serving the signed bytes.
func BenchmarkCardV03(b *testing.B) {
	key := didtest.Key(b, 1)
	raw, err := SignCard(mustBuild(b, CardOptions{Name: "n", BaseURL: "https://r.example/a/" + key.DID().String(), OfflineMode: "sleep"}), key)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, err := CardV03(raw); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}
