package governed_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/governed/governedtest"
)

var issued = time.Date(2026, 1, 15, 11, 59, 0, 0, time.UTC)

func mustSign(tb testing.TB, k *did.PrivateKey, t governed.Template) *governed.Object {
	tb.Helper()
	o, err := governed.Sign(k, t)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

func mustMarshal(tb testing.TB, o *governed.Object) []byte {
	tb.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func template001() governed.Template {
	return governed.Template{
		ID:       "01948f00-0000-7000-8000-000000000001",
		IssuedAt: issued,
		Semantic: governed.Semantic{Schema: "https://atom.qwixl.dev/schema/CommsMessage"},
		Payload:  map[string]string{"text": "hello"},
		Purpose:  "comms:message",
		TTL:      time.Hour,
	}
}

// TestSignReproducesVector001 signs the content of vector 001 with Alice's
// key: Ed25519 is deterministic, so the bytes must be the reference's.
func TestSignReproducesVector001(t *testing.T) {
	o := mustSign(t, didtest.Key(t, 1), template001())
	want := `{"version":1,"id":"01948f00-0000-7000-8000-000000000001","issuerDid":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG","issuedAt":"2026-01-15T11:59:00.000Z","semantic":{"schema":"https://atom.qwixl.dev/schema/CommsMessage"},"payload":{"text":"hello"},"governance":{"purpose":"comms:message","ttlSeconds":3600},"signatureAlgorithm":"ed25519","signature":"cwqOWw+iVJSW7Yk5oObo4FbwMVTVuwCL7MBi+kDsvflJIa3DdaneMdXbhkufB3jRNupBd0MLriOEC6PluKNpBw=="}`
	if diff := cmp.Diff(want, string(mustMarshal(t, o))); diff != "" {
		t.Errorf("Sign (-want +got):\n%s", diff)
	}
}

// TestVerifyAsReceived shows that the signature covers the canonical form
// of the members as received: any serialisation of the same JSON verifies
// (key order, white space, escapes, number spelling), and any change of
// value does not.
func TestVerifyAsReceived(t *testing.T) {
	k := didtest.Key(t, 1)
	tpl := template001()
	tpl.Payload = map[string]any{"\U0001F600": "grin", "\uE000": "private use", "ärger": nil, "n": 1.5, "big": 1e21, "arr": []any{3, 1, 2}}
	o := mustSign(t, k, tpl)
	wantPayload := "{\"arr\":[3,1,2],\"big\":1e+21,\"n\":1.5,\"ärger\":null,\"😀\":\"grin\",\"\ue000\":\"private use\"}"
	if !bytes.Contains(o.SignedBytes(), []byte(`"payload":`+wantPayload)) {
		t.Errorf("SignedBytes = %s\nwant payload %s", o.SignedBytes(), wantPayload)
	}
	sig := base64.StdEncoding.EncodeToString(o.Signature)
	variant := `{ "signature" : "` + strings.TrimRight(sig, "=") + `",
	  "governance": {"ttlSeconds": 3.6e3, "purpose": "comms:message"},
	  "payload": {"\ue000":"private use", "\ud83d\ude00":"gr\u0069n", "arr":[3,1,2], "big":1000000000000000000000, "n":15e-1, "\u00e4rger":null},
	  "semantic": {"schema":"https:\/\/atom.qwixl.dev\/schema\/CommsMessage"},
	  "issuedAt":"2026-01-15T11:59:00.000Z", "issuerDid":"` + k.DID().String() + `", "id":"01948f00-0000-7000-8000-000000000001",
	  "version": 1.0, "signatureAlgorithm":"ed25519" }`
	v, err := governed.Parse([]byte(variant))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(); err != nil {
		t.Errorf("equivalent serialisation: %v", err)
	}
	// MarshalJSON writes the members as received, in received order.
	m := string(mustMarshal(t, v))
	if !strings.HasPrefix(m, `{"signature":`) || !strings.Contains(m, `"version":1.0`) || !strings.Contains(m, `{"ttlSeconds": 3.6e3, "purpose": "comms:message"}`) {
		t.Errorf("MarshalJSON did not keep members as received: %s", m)
	}
	for _, change := range []struct{ from, to string }{
		{`"arr":[3,1,2]`, `"arr":[1,2,3]`},
		{`"\u00e4rger":null`, `"\u00e4rger":0`},
		{`"ttlSeconds": 3.6e3`, `"ttlSeconds": 3601`},
		{`"version": 1.0,`, `"version": 1, "x":0,`}, // an unknown member is malformed
	} {
		b := strings.Replace(variant, change.from, change.to, 1)
		v, err := governed.Parse([]byte(b))
		if err == nil {
			err = v.VerifySignature()
		}
		if err == nil {
			t.Errorf("changing %s to %s still verifies", change.from, change.to)
		}
	}
}

func TestSignTemplateErrors(t *testing.T) {
	k := didtest.Key(t, 1)
	tests := []struct {
		name string
		edit func(*governed.Template)
	}{
		{"no issuedAt", func(t *governed.Template) { t.IssuedAt = time.Time{} }},
		{"no purpose", func(t *governed.Template) { t.Purpose = "" }},
		{"relative schema", func(t *governed.Template) { t.Semantic.Schema = "CommsMessage" }},
		{"payload array", func(t *governed.Template) { t.Payload = []int{1} }},
		{"payload nil", func(t *governed.Template) { t.Payload = nil }},
		{"fractional ttl", func(t *governed.Template) { t.TTL = 1500 * time.Millisecond }},
		{"negative ttl", func(t *governed.Template) { t.TTL = -time.Second }},
		{"unmarshalable payload", func(t *governed.Template) { t.Payload = map[string]any{"c": make(chan int)} }},
	}
	for _, tt := range tests {
		tpl := template001()
		tt.edit(&tpl)
		if _, err := governed.Sign(k, tpl); err == nil {
			t.Errorf("%s: Sign succeeded", tt.name)
		}
	}
}

func TestSignGeneratesIDs(t *testing.T) {
	k := didtest.Key(t, 1)
	tpl := template001()
	tpl.ID = ""
	tpl.ExpiresAt = issued.Add(30 * time.Minute)
	seen := map[string]bool{}
	ms := fmt.Sprintf("%012x", issued.UnixMilli())
	prefix := ms[:8] + "-" + ms[8:] + "-7"
	for range 100 {
		o := mustSign(t, k, tpl)
		if len(o.ID) != 36 || !strings.HasPrefix(o.ID, prefix) || !strings.ContainsAny(o.ID[19:20], "89ab") || seen[o.ID] {
			t.Fatalf("generated id %q: want a fresh UUIDv7 of %v", o.ID, issued)
		}
		seen[o.ID] = true
		if exp, ok := o.Expiry(); !ok || !exp.Equal(issued.Add(30*time.Minute)) {
			t.Errorf("Expiry = %v, %v; want the earlier expiresAt", exp, ok)
		}
	}
}

// validObject is a signed object as a generic map, for structural edits.
func validObject(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustMarshal(tb, mustSign(tb, didtest.Key(tb, 1), template001())), &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestParseMalformed(t *testing.T) {
	good := string(mustMarshal(t, mustSign(t, didtest.Key(t, 1), template001())))
	edit := func(f func(m map[string]any)) string {
		m := validObject(t)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	gov := func(f func(g map[string]any)) string {
		return edit(func(m map[string]any) { f(m["governance"].(map[string]any)) })
	}
	tests := []struct{ name, in string }{
		{"not an object", `[1]`},
		{"trailing data", good + `{}`},
		{"missing id", edit(func(m map[string]any) { delete(m, "id") })},
		{"missing signature", edit(func(m map[string]any) { delete(m, "signature") })},
		{"unknown member", edit(func(m map[string]any) { m["extra"] = 1 })},
		{"version 2", edit(func(m map[string]any) { m["version"] = 2 })},
		{"version string", edit(func(m map[string]any) { m["version"] = "1" })},
		{"id empty", edit(func(m map[string]any) { m["id"] = "" })},
		{"id number", edit(func(m map[string]any) { m["id"] = 7 })},
		{"id with NUL", edit(func(m map[string]any) { m["id"] = "a\x00b" })},
		{"id with newline", edit(func(m map[string]any) { m["id"] = "a\nb" })},
		{"id with C1 control", edit(func(m map[string]any) { m["id"] = "a\u0085b" })},
		{"issuer did:web", edit(func(m map[string]any) { m["issuerDid"] = "did:web:example.com" })},
		{"issuedAt not RFC 3339", edit(func(m map[string]any) { m["issuedAt"] = "15 Jan 2026 11:59" })},
		{"semantic not object", edit(func(m map[string]any) { m["semantic"] = "x" })},
		{"schema missing", edit(func(m map[string]any) { m["semantic"] = map[string]any{"version": "1"} })},
		{"schema relative", edit(func(m map[string]any) { m["semantic"] = map[string]any{"schema": "CommsMessage"} })},
		{"payload array", edit(func(m map[string]any) { m["payload"] = []any{} })},
		{"payload null", edit(func(m map[string]any) { m["payload"] = nil })},
		{"governance extra", gov(func(g map[string]any) { g["retention"] = "1y" })},
		{"purpose missing", gov(func(g map[string]any) { delete(g, "purpose") })},
		{"purpose empty", gov(func(g map[string]any) { g["purpose"] = "" })},
		{"purpose with NUL", gov(func(g map[string]any) { g["purpose"] = "comms:\x00message" })},
		{"purpose with DEL", gov(func(g map[string]any) { g["purpose"] = "comms:message\x7f" })},
		{"ttl negative", gov(func(g map[string]any) { g["ttlSeconds"] = -1 })},
		{"ttl string", gov(func(g map[string]any) { g["ttlSeconds"] = "3600" })},
		{"expiresAt bad", gov(func(g map[string]any) { g["expiresAt"] = "tomorrow" })},
		{"algorithm case", edit(func(m map[string]any) { m["signatureAlgorithm"] = "Ed25519" })},
		{"signature url-safe", edit(func(m map[string]any) {
			m["signature"] = strings.NewReplacer("+", "-", "/", "_").Replace(m["signature"].(string))
		})},
		{"signature short", edit(func(m map[string]any) { m["signature"] = "AAAA" })},
		{"signature with space", edit(func(m map[string]any) { m["signature"] = " " + m["signature"].(string) })},
		{"duplicate member", strings.Replace(good, `"version":1,`, `"version":1,"version":1,`, 1)},
		{"duplicate payload member", strings.Replace(good, `{"text":"hello"}`, `{"text":"hello","text":"bye"}`, 1)},
		{"lone surrogate", strings.Replace(good, `"hello"`, `"hel\ud800lo"`, 1)},
		{"invalid UTF-8", strings.Replace(good, `"hello"`, "\"hel\xfflo\"", 1)},
		{"number out of range", strings.Replace(good, `{"text":"hello"}`, `{"n":1e999}`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := governed.Parse([]byte(tt.in))
			if governed.ReasonOf(err) != governed.ReasonMalformed {
				t.Errorf("Parse(%.80s…) = %v, want malformed", tt.in, err)
			}
		})
	}
}

// TestParseUnpaddedSignature: unpadded base64 is accepted on input.
func TestParseUnpaddedSignature(t *testing.T) {
	good := string(mustMarshal(t, mustSign(t, didtest.Key(t, 1), template001())))
	unpadded := strings.Replace(good, `==",`, `",`, 1)
	unpadded = strings.Replace(unpadded, `=="}`, `"}`, 1)
	o, err := governed.Parse([]byte(unpadded))
	if err != nil || o.VerifySignature() != nil {
		t.Errorf("unpadded signature: %v", err)
	}
}

// failingReplay is a replay cache whose store is broken.
type failingReplay struct{}

func (failingReplay) Seen(string, string, time.Time) (bool, error) {
	return false, errors.New("disk on fire")
}
func (failingReplay) Admit(string, string, time.Time) error { return errors.New("disk on fire") }

func TestReceiverChecks(t *testing.T) {
	alice, bob := didtest.Key(t, 1), didtest.Key(t, 2)
	sign := func(k *did.PrivateKey, f func(*governed.Template)) []byte {
		tpl := template001()
		tpl.ID = ""
		if f != nil {
			f(&tpl)
		}
		return mustMarshal(t, mustSign(t, k, tpl))
	}
	ttl60 := sign(alice, func(t *governed.Template) { t.TTL = time.Minute })
	noExpiry := sign(alice, func(t *governed.Template) { t.TTL = 0 })
	bothExp := sign(alice, func(t *governed.Template) { t.TTL = 24 * time.Hour; t.ExpiresAt = issued.Add(10 * time.Second) })
	action := sign(alice, func(t *governed.Template) { t.Purpose = "action:capture" })
	byBob := sign(bob, nil)
	tampered := bytes.Replace(sign(alice, nil), []byte("hello"), []byte("jello"), 1)
	tamperedExpired := bytes.Replace(ttl60, []byte("hello"), []byte("jello"), 1)
	actionExpired := sign(alice, func(t *governed.Template) { t.Purpose = "action:capture"; t.TTL = time.Minute })
	yearTTL := sign(alice, func(t *governed.Template) { t.TTL = 365 * 24 * time.Hour })

	comms := []string{"comms:message"}
	tests := []receiverCase{
		{"ttl last instant", governed.Receiver{Purposes: comms}, ttl60, nil, time.Minute - time.Nanosecond, 0},
		{"ttl boundary is expired", governed.Receiver{Purposes: comms}, ttl60, nil, time.Minute, governed.ReasonExpired},
		{"earlier expiresAt wins", governed.Receiver{Purposes: comms}, bothExp, nil, 10 * time.Second, governed.ReasonExpired},
		{"before expiresAt", governed.Receiver{Purposes: comms}, bothExp, nil, 9 * time.Second, 0},
		{"no expiry within default max", governed.Receiver{Purposes: comms}, noExpiry, nil, 7*24*time.Hour - time.Second, 0},
		{"no expiry at default max", governed.Receiver{Purposes: comms}, noExpiry, nil, 7 * 24 * time.Hour, governed.ReasonExpired},
		{"no expiry custom max", governed.Receiver{Purposes: comms, MaxLifetime: time.Hour}, noExpiry, nil, time.Hour, governed.ReasonExpired},
		{"explicit lifetime within default cap", governed.Receiver{Purposes: comms}, yearTTL, nil, 30*24*time.Hour - time.Second, 0},
		{"explicit lifetime capped by default", governed.Receiver{Purposes: comms}, yearTTL, nil, 30 * 24 * time.Hour, governed.ReasonExpired},
		{"explicit lifetime custom cap", governed.Receiver{Purposes: comms, MaxExplicitLifetime: 2 * time.Hour}, yearTTL, nil, 2 * time.Hour, governed.ReasonExpired},
		{"explicit lifetime under cap untouched", governed.Receiver{Purposes: comms, MaxExplicitLifetime: 2 * time.Hour}, ttl60, nil, time.Minute - time.Nanosecond, 0},
		{"sender is issuer", governed.Receiver{Purposes: comms}, ttl60, alice, 0, 0},
		{"sender is not issuer", governed.Receiver{Purposes: comms}, ttl60, bob, 0, governed.ReasonSenderMismatch},
		{"purpose not permitted", governed.Receiver{Purposes: comms}, action, nil, 0, governed.ReasonPurposeNotPermitted},
		{"purpose compared exactly", governed.Receiver{Purposes: []string{"Comms:Message", "comms:message "}}, ttl60, nil, 0, governed.ReasonPurposeNotPermitted},
		{"empty allowlist accepts nothing", governed.Receiver{}, ttl60, nil, 0, governed.ReasonPurposeNotPermitted},
		{"allow any purpose", governed.Receiver{AllowAnyPurpose: true}, action, nil, 0, 0},
		{"tampered", governed.Receiver{Purposes: comms}, tampered, nil, 0, governed.ReasonSignatureInvalid},
		{"signed by another", governed.Receiver{Purposes: comms}, byBob, nil, 0, 0}, // Bob signs as Bob: fine
		// Order: earlier checks win.
		{"signature before expiry", governed.Receiver{Purposes: comms}, tamperedExpired, nil, time.Hour, governed.ReasonSignatureInvalid},
		{"sender before expiry", governed.Receiver{Purposes: comms}, ttl60, bob, time.Hour, governed.ReasonSenderMismatch},
		{"expiry before purpose", governed.Receiver{Purposes: comms}, actionExpired, nil, time.Hour, governed.ReasonExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// receiverCase is an object received by a Receiver at a time, and the
// reason it is rejected for (0: accepted).
type receiverCase struct {
	name   string
	r      governed.Receiver
	obj    []byte
	sender *did.PrivateKey
	at     time.Duration // after issuedAt
	want   governed.Reason
}

func (tt receiverCase) check(t *testing.T) {
	r := tt.r
	r.Clock = clocktest.New(issued.Add(tt.at))
	in := governed.Input{Replay: governedtest.NewReplay()}
	if tt.sender != nil {
		in.Sender = tt.sender.DID()
	}
	_, err := r.Accept(tt.obj, in)
	if got := governed.ReasonOf(err); got != tt.want || (tt.want == 0 && err != nil) {
		t.Errorf("Accept = %v, want reason %v", err, tt.want)
	}
}

func TestReceiverReplay(t *testing.T) {
	alice := didtest.Key(t, 1)
	clk := clocktest.New(issued)
	r := &governed.Receiver{Purposes: []string{"comms:message"}, Clock: clk}
	cache := governedtest.NewReplay()
	in := governed.Input{Replay: cache}

	// A purpose-rejected object does not burn its id.
	tpl := template001()
	tpl.Purpose = "action:capture"
	refused := mustMarshal(t, mustSign(t, alice, tpl))
	if _, err := r.Accept(refused, in); governed.ReasonOf(err) != governed.ReasonPurposeNotPermitted {
		t.Fatalf("Accept(action) = %v", err)
	}
	if cache.Len() != 0 {
		t.Fatalf("a rejected object was recorded")
	}
	b := mustMarshal(t, mustSign(t, alice, template001()))
	if _, err := r.Accept(b, in); err != nil {
		t.Fatalf("first Accept = %v", err)
	}
	clk.Advance(30 * time.Minute)
	_, err := r.Accept(b, in)
	if governed.ReasonOf(err) != governed.ReasonReplay {
		t.Fatalf("second Accept = %v, want replay", err)
	}
	// The same id from another issuer is a different object.
	other := mustMarshal(t, mustSign(t, didtest.Key(t, 2), template001()))
	if _, err := r.Accept(other, in); err != nil {
		t.Errorf("same id, other issuer: %v", err)
	}

	// A failing store is not a rejection, and the sender learns nothing.
	_, err = r.Accept(mustMarshal(t, mustSign(t, alice, governed.Template{IssuedAt: issued, Semantic: governed.Semantic{Schema: "urn:x"}, Payload: map[string]int{}, Purpose: "comms:message"})), governed.Input{Replay: failingReplay{}})
	if err == nil || governed.ReasonOf(err) != 0 || governed.Outward(err) != governed.ErrProcessing {
		t.Errorf("Accept with a failing cache = %v (outward %v), want a processing error", err, governed.Outward(err))
	}
	if _, err := r.Accept(b, governed.Input{}); err == nil {
		t.Error("Accept without a replay cache succeeded")
	}
}

func TestOutward(t *testing.T) {
	r := &governed.Receiver{Clock: clocktest.New(issued)}
	_, err := r.Accept(mustMarshal(t, mustSign(t, didtest.Key(t, 1), template001())), governed.Input{Replay: governedtest.NewReplay()})
	if !errors.Is(err, governed.ErrRejected) {
		t.Fatalf("Accept = %v, want a rejection", err)
	}
	out := governed.Outward(err)
	if out != governed.ErrRejected || strings.Contains(out.Error(), "purpose") {
		t.Errorf("Outward(%v) = %v, want the coarse ErrRejected", err, out)
	}
	if governed.Outward(nil) != nil {
		t.Error("Outward(nil) != nil")
	}
}
