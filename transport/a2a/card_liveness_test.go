package a2a

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did/didtest"
)

// hash32 is a well-formed chain hash (32 bytes, base64url without padding).
const hash32 = "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"

const livenessJSON = `{"nextWindow":{"start":"2026-01-15T13:11:00Z","lengthSeconds":300},` +
	`"pulse":{"seq":42,"hash":"` + hash32 + `","url":"https://relay.example/a/did:key:z6Mk/pulse"}}`

func TestBuildCardLiveness(t *testing.T) {
	// A start with a zone and a fraction is published in UTC, whole seconds.
	start := time.Date(2026, 1, 15, 14, 11, 0, 500e6, time.FixedZone("CET", 3600))
	in := Liveness{NextWindow: &NextWindow{Start: start, Length: 5 * time.Minute}, Pulse: PulseRef{Seq: 42, Hash: hash32}}
	c := mustBuild(t, CardOptions{Name: "a", BaseURL: "https://relay.example/a/did:key:z6Mk/", OfflineMode: "hourly_wake", Liveness: &in})
	e, ok := c.Extension(ExtLiveness)
	if !ok {
		t.Fatalf("no %s extension in %+v", ExtLiveness, c.Capabilities.Extensions)
	}
	if string(e.Params) != livenessJSON || e.Required || e.Description == "" {
		t.Errorf("extension = %+v (params %s), want params %s, not required, described", e, e.Params, livenessJSON)
	}
	got, ok, err := c.Liveness()
	want := Liveness{NextWindow: &NextWindow{Start: time.Date(2026, 1, 15, 13, 11, 0, 0, time.UTC), Length: 5 * time.Minute},
		Pulse: PulseRef{Seq: 42, Hash: hash32, URL: "https://relay.example/a/did:key:z6Mk/pulse"}}
	if err != nil || !ok {
		t.Fatalf("Liveness() = _, %v, %v; want the extension", ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Liveness() (-want +got):\n%s", diff)
	}

	// Signed, the card verifies with the extension in it, and no window is
	// published when none is planned.
	key := didtest.Key(t, 3)
	c = mustBuild(t, CardOptions{Name: "a", BaseURL: "https://relay.example/a/" + key.DID().String(),
		Liveness: &Liveness{Pulse: PulseRef{Seq: 1, Hash: hash32}}})
	raw, err := SignCard(c, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyCard(raw, key.DID()); err != nil {
		t.Fatalf("VerifyCard: %v", err)
	}
	parsed, err := ParseCard(raw)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok, err := parsed.Liveness(); err != nil || !ok || l.NextWindow != nil || l.Pulse.URL != "https://relay.example/a/"+key.DID().String()+"/pulse" {
		t.Errorf("signed card's Liveness() = %+v, %v, %v; want pulse 1 at the agent's pulse URL and no window", l, ok, err)
	}

	// A card without the extension has none; one BuildCard cannot publish
	// is refused.
	if _, ok, err := mustBuild(t, CardOptions{Name: "a", BaseURL: "https://x"}).Liveness(); ok || err != nil {
		t.Errorf("Liveness() without the extension = %v, %v; want false, nil", ok, err)
	}
	for _, bad := range []Liveness{
		{Pulse: PulseRef{Seq: 0, Hash: hash32}},
		{Pulse: PulseRef{Seq: 1, Hash: "abc"}},
		{Pulse: PulseRef{Seq: 1, Hash: hash32}, NextWindow: &NextWindow{Start: start, Length: time.Second / 2}},
	} {
		if _, err := BuildCard(CardOptions{Name: "a", BaseURL: "https://x", Liveness: &bad}); !errors.Is(err, ErrExtensionSchema) {
			t.Errorf("BuildCard with liveness %+v: %v, want ErrExtensionSchema", bad, err)
		}
	}
}

func TestLivenessStrict(t *testing.T) {
	win := `"nextWindow":{"start":"2026-01-15T13:11:00Z","lengthSeconds":300}`
	pulse := func(seq, hash, url string) string {
		return `"pulse":{"seq":` + seq + `,"hash":"` + hash + `","url":"` + url + `"}`
	}
	good := pulse("42", hash32, "https://relay.example/a/did:key:z6Mk/pulse")
	tests := []struct {
		name, params, want string // want: a phrase of the error
	}{
		{"no pulse", `{` + win + `}`, "pulse is required"},
		{"null", `null`, "pulse is required"},
		{"empty", ``, "EOF"},
		{"array", `[]`, "cannot unmarshal"},
		{"unknown member", `{` + good + `,"extra":1}`, `unknown field "extra"`},
		{"unknown pulse member", `{"pulse":{"seq":1,"hash":"` + hash32 + `","url":"https://r/pulse","at":"x"}}`, `unknown field "at"`},
		{"unknown window member", `{"nextWindow":{"start":"2026-01-15T13:11:00Z","lengthSeconds":300,"end":"x"},` + good + `}`, `unknown field "end"`},
		{"trailing data", `{` + good + `}}`, "data after"},
		{"seq 0", `{` + pulse("0", hash32, "https://r/pulse") + `}`, "pulse.seq"},
		{"seq negative", `{` + pulse("-1", hash32, "https://r/pulse") + `}`, "cannot unmarshal"},
		{"seq string", `{"pulse":{"seq":"1","hash":"` + hash32 + `","url":"https://r/pulse"}}`, "cannot unmarshal"},
		{"no seq", `{"pulse":{"hash":"` + hash32 + `","url":"https://r/pulse"}}`, "pulse.seq"},
		{"no hash", `{"pulse":{"seq":1,"url":"https://r/pulse"}}`, "pulse.hash"},
		{"hash padded", `{` + pulse("1", hash32+"=", "https://r/pulse") + `}`, "pulse.hash"},
		{"hash std base64", `{` + pulse("1", strings.ReplaceAll(hash32, "-", "+"), "https://r/pulse") + `}`, "pulse.hash"},
		{"hash short", `{` + pulse("1", hash32[:40], "https://r/pulse") + `}`, "pulse.hash"},
		{"no url", `{"pulse":{"seq":1,"hash":"` + hash32 + `"}}`, "pulse.url is required"},
		{"relative url", `{` + pulse("1", hash32, "/a/did:key:z6Mk/pulse") + `}`, "pulse.url"},
		{"other scheme", `{` + pulse("1", hash32, "ftp://r/pulse") + `}`, "pulse.url"},
		{"not the pulse", `{` + pulse("1", hash32, "https://r/a/did:key:z6Mk/.well-known/agent-card.json") + `}`, "pulse.url"},
		{"query", `{` + pulse("1", hash32, "https://r/pulse?seq=1") + `}`, "pulse.url"},
		{"no start", `{"nextWindow":{"lengthSeconds":300},` + good + `}`, "nextWindow.start is required"},
		{"start with offset", `{"nextWindow":{"start":"2026-01-15T14:11:00+01:00","lengthSeconds":300},` + good + `}`, "nextWindow.start"},
		{"start with fraction", `{"nextWindow":{"start":"2026-01-15T13:11:00.5Z","lengthSeconds":300},` + good + `}`, "nextWindow.start"},
		{"start lowercase z", `{"nextWindow":{"start":"2026-01-15t13:11:00z","lengthSeconds":300},` + good + `}`, "nextWindow.start"},
		{"start a number", `{"nextWindow":{"start":1768482660,"lengthSeconds":300},` + good + `}`, "cannot unmarshal"},
		{"no length", `{"nextWindow":{"start":"2026-01-15T13:11:00Z"},` + good + `}`, "lengthSeconds"},
		{"length 0", `{"nextWindow":{"start":"2026-01-15T13:11:00Z","lengthSeconds":0},` + good + `}`, "lengthSeconds"},
		{"length fraction", `{"nextWindow":{"start":"2026-01-15T13:11:00Z","lengthSeconds":1.5},` + good + `}`, "cannot unmarshal"},
		{"window null", `{"nextWindow":null,` + good + `}`, ""},
		{"valid", `{` + win + `,` + good + `}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkLivenessParams(t, tt.params, tt.want) })
	}
}

// checkLivenessParams checks that Liveness reads a card whose liveness
// extension has params, failing with a schema CardError saying want
// (accepting them when want is "").
func checkLivenessParams(t *testing.T, params, want string) {
	t.Helper()
	c := &Card{Capabilities: Capabilities{Extensions: []Extension{{URI: ExtLiveness, Description: "d", Params: []byte(params)}}}}
	_, ok, err := c.Liveness()
	if !ok {
		t.Fatalf("Liveness(%s): extension not found", params)
	}
	if want == "" {
		if err != nil {
			t.Errorf("Liveness(%s) = %v, want no error", params, err)
		}
		return
	}
	var ce *CardError
	if !errors.As(err, &ce) || ce.Reason != "schema" || !errors.Is(err, ErrExtensionSchema) || !strings.Contains(err.Error(), want) {
		t.Errorf("Liveness(%s) = %v, want a schema CardError saying %q", params, err, want)
	}
}

// FuzzLiveness: params that decode marshal to a form that decodes to the
// same value and marshals to the same bytes.
func FuzzLiveness(f *testing.F) {
	f.Add([]byte(livenessJSON))
	f.Add([]byte(`{"pulse":{"seq":1,"hash":"` + hash32 + `","url":"http://127.0.0.1:8080/a/did:key:z6Mk/pulse"}}`))
	f.Add([]byte(`{"nextWindow":{"start":"2026-01-15T14:11:00+01:00","lengthSeconds":300}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Liveness
		if l.UnmarshalJSON(b) != nil {
			return
		}
		enc, err := l.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of decoded %s: %v", b, err)
		}
		var again Liveness
		if err := again.UnmarshalJSON(enc); err != nil {
			t.Fatalf("UnmarshalJSON(%s) after a round trip: %v", enc, err)
		}
		if diff := cmp.Diff(l, again); diff != "" {
			t.Fatalf("round trip of %s (-first +second):\n%s", b, diff)
		}
		if enc2, _ := again.MarshalJSON(); !bytes.Equal(enc, enc2) {
			t.Fatalf("MarshalJSON not stable: %s, then %s", enc, enc2)
		}
	})
}
