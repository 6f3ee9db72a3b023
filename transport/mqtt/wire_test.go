package mqtt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func signedCommand(t testing.TB, op string, args any) *governed.Object {
	t.Helper()
	o, err := SignCommand(didtest.Key(t, 1), CommandSpec{Device: didtest.Key(t, 2).DID(), Seq: 7, Op: op, Args: args, IssuedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestCBORCarriesTheSignedObject(t *testing.T) {
	window, offset := int64(600), int64(-30)
	o := signedCommand(t, OpSetMode, &SetModeArgs{Mode: "hourly_wake", WindowSec: &window, OffsetSec: &offset})
	j, _ := o.MarshalJSON()
	c, err := encodePayload(j, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) >= len(j) {
		t.Errorf("CBOR is %d bytes, JSON %d: expected it smaller", len(c), len(j))
	}
	back, err := decodePayload(ContentTypeCBOR, c)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := governed.Parse(back)
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.VerifySignature(); err != nil {
		t.Fatalf("signature after JSON→CBOR→JSON: %v", err)
	}
	if !bytes.Equal(o.SignedBytes(), o2.SignedBytes()) {
		t.Errorf("canonical forms differ:\n%s\n%s", o.SignedBytes(), o2.SignedBytes())
	}
	// The deterministic encoding is stable: encoding again gives the
	// same bytes.
	c2, _ := encodePayload(back, true)
	if !bytes.Equal(c, c2) {
		t.Error("re-encoding the decoded object gave different CBOR")
	}
}

func TestToJSONRefusesWhatJSONCannotHold(t *testing.T) {
	tests := []struct {
		name string
		hex  string // CBOR
	}{
		{"not a map", "83010203"},
		{"integer key", "a10102"},
		{"byte string", "a1616142cafe"},
		{"tag", "a16161c11a514b67b0"},
		{"undefined", "a16161f7"},
		{"NaN", "a16161f97e00"},
		{"infinity", "a16161f97c00"},
		{"duplicate key", "a2616101616102"},
		{"indefinite length", "bf616101ff"},
		{"trailing bytes", "a161610100"},
		{"invalid UTF-8", "a16161 62c328"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(strings.ReplaceAll(tt.hex, " ", ""))
			if err != nil {
				t.Fatal(err)
			}
			if j, err := toJSON(b); err == nil {
				t.Errorf("toJSON(%s) = %s, want an error", tt.hex, j)
			}
		})
	}
	// What the JSON model has converts exactly.
	b, _ := hex.DecodeString("a561611903e86162f56163806164206165f93e00") // {"a":1000,"b":true,"c":[],"d":-1,"e":1.5}
	j, err := toJSON(b)
	if err != nil || string(j) != `{"a":1000,"b":true,"c":[],"d":-1,"e":1.5}` {
		t.Errorf("toJSON = %s, %v", j, err)
	}
	// -0 is a float: no CBOR integer holds it (found by FuzzCBORPayload).
	if c, err := toCBOR([]byte(`{"a":-0,"b":0}`)); err != nil || hex.EncodeToString(c) != "a26161f98000616200" {
		t.Errorf("toCBOR(-0) = %x, %v, want a26161f98000616200", c, err)
	}
}

func TestContentTypes(t *testing.T) {
	tests := []struct {
		ct      string
		cbor    bool
		wantErr bool
	}{
		{"", false, false},
		{"application/json", false, false},
		{"application/json; charset=utf-8", false, false},
		{"application/cbor", true, false},
		{"text/plain", false, true},
		{"application/cbor+json", false, true},
		{"garbage;;", false, true},
	}
	for _, tt := range tests {
		got, err := isCBOR(tt.ct)
		if got != tt.cbor || (err != nil) != tt.wantErr {
			t.Errorf("isCBOR(%q) = %v, %v; want %v, error %v", tt.ct, got, err, tt.cbor, tt.wantErr)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		op, args string
		want     any
		wantErr  string
	}{
		{OpStatus, ``, nil, ""},
		{OpStatus, `{}`, nil, ""},
		{OpStatus, `{"x":1}`, nil, "takes no arguments"},
		{OpSetMode, `{"mode":"sleep"}`, &SetModeArgs{Mode: "sleep"}, ""},
		{OpSetMode, `{"mode":"nap"}`, nil, "unknown reachability mode"},
		{OpSetMode, `{"mode":"hourly_wake","windowSec":0}`, nil, "windowSec"},
		{OpSetMode, `{"mode":"hourly_wake","offsetSec":3600}`, nil, "offsetSec"},
		{OpSetMode, `{"mode":"sleep","extra":true}`, nil, "unknown field"},
		{OpWakeNow, `{"forSec":-1}`, nil, "negative"},
		{OpConfirm, `{"hold":""}`, nil, "hold must not be empty"},
		{OpConfirm, `{"hold":"k"}`, &HoldArgs{Hold: "k"}, ""},
		{OpReconcile, `{"key":"k","happened":true,"receipt":"r"}`, &ReconcileArgs{Key: "k", Happened: true, Receipt: "r"}, ""},
		{OpConfigGet, `{"key":"k","value":"v"}`, nil, "takes no value"},
		{OpConfigSet, `{"key":"k"}`, nil, "needs a value"},
		{OpReboot, `{}`, &RebootArgs{}, ""},
		{OpReboot, `{} {}`, nil, "trailing"},
		{"format-disk", `{}`, nil, "unknown operation"},
	}
	for _, tt := range tests {
		got, err := DecodeArgs(tt.op, json.RawMessage(tt.args))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeArgs(%s, %s) error = %v, want one containing %q", tt.op, tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tt.want) {
			t.Errorf("DecodeArgs(%s, %s) = %#v, %v; want %#v", tt.op, tt.args, got, err, tt.want)
		}
	}
}

func TestEveryOpHasArgsSpec(t *testing.T) {
	if len(Ops) != len(opArgs) {
		t.Errorf("Ops lists %d operations, opArgs %d", len(Ops), len(opArgs))
	}
	for _, op := range Ops {
		if _, ok := opArgs[op]; !ok {
			t.Errorf("op %s has no argument spec", op)
		}
	}
}

func TestNextSeq(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	tests := []struct {
		last uint64
		now  time.Time
		want uint64
	}{
		{0, now, 1_000_000},
		{999_999, now, 1_000_000},
		{1_000_000, now, 1_000_001}, // same millisecond
		{5_000_000, now, 5_000_001}, // the clock stepped back
		{0, time.UnixMilli(-5), 1},
	}
	for _, tt := range tests {
		if got := NextSeq(tt.last, tt.now); got != tt.want {
			t.Errorf("NextSeq(%d, %v) = %d, want %d", tt.last, tt.now.UnixMilli(), got, tt.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"dev-9", "a", "Pi_Zero.2", "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "+", "#", "dev 9", "$SYS", "é", strings.Repeat("x", 129)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
	for _, bad := range []string{"", "/a", "a//b", "a/+", "$share/x", "a/"} {
		if err := CheckPrefix(bad); err == nil {
			t.Errorf("CheckPrefix(%q) = nil, want an error", bad)
		}
	}
	got := Topics{Device: "dev-9"}
	want := []string{"torpor/v1/dev-9/cmd", "torpor/v1/dev-9/reply", "torpor/v1/dev-9/status", "torpor/v1/dev-9/event", "torpor/v1/dev-9/sync"}
	if d := cmp.Diff(want, []string{got.Command(), got.Reply(), got.Status(), got.Event(), got.Sync()}); d != "" {
		t.Errorf("topics (-want +got):\n%s", d)
	}
}

func TestOrderBatch(t *testing.T) {
	a, b := didtest.Key(t, 1), didtest.Key(t, 3)
	dev := didtest.Key(t, 2).DID()
	mk := func(k *did.PrivateKey, seq uint64, at time.Duration) parsed {
		o, err := SignCommand(k, CommandSpec{Device: dev, Seq: seq, Op: OpStatus, IssuedAt: t0.Add(at * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		return parsed{obj: o, seq: seq}
	}
	bad := parsed{rej: reject("malformed", "x")}
	// Operator a's commands arrive 3, 1, 2; b's 2, 1; one junk message.
	in := []parsed{mk(a, 3, 3), mk(b, 20, 5), mk(a, 1, 1), bad, mk(a, 2, 2), mk(b, 10, 0)}
	var got []string
	for _, p := range orderBatch(in) {
		if p.obj == nil {
			got = append(got, "bad")
			continue
		}
		name := "a"
		if p.obj.Issuer == b.DID() {
			name = "b"
		}
		got = append(got, name+"-"+itoa(p.seq))
	}
	want := []string{"bad", "b-10", "a-1", "a-2", "a-3", "b-20"}
	if !cmp.Equal(got, want) {
		t.Errorf("orderBatch = %v, want %v", got, want)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestSignCommandChecksArguments(t *testing.T) {
	k := didtest.Key(t, 1)
	dev := didtest.Key(t, 2).DID()
	tests := []struct {
		name string
		spec CommandSpec
	}{
		{"no device", CommandSpec{Seq: 1, Op: OpStatus, IssuedAt: t0}},
		{"seq 0", CommandSpec{Device: dev, Op: OpStatus, IssuedAt: t0}},
		{"bad args", CommandSpec{Device: dev, Seq: 1, Op: OpSetMode, Args: &SetModeArgs{Mode: "x"}, IssuedAt: t0}},
		{"unknown op", CommandSpec{Device: dev, Seq: 1, Op: "explode", IssuedAt: t0}},
	}
	for _, tt := range tests {
		if _, err := SignCommand(k, tt.spec); err == nil {
			t.Errorf("SignCommand(%s) succeeded", tt.name)
		}
	}
	o := signedCommand(t, OpConfirm, &HoldArgs{Hold: "h1"})
	p, args, err := parseCommandPayload(o)
	if err != nil || p.Seq != 7 || p.Device != dev.String() || args.(*HoldArgs).Hold != "h1" {
		t.Errorf("parseCommandPayload = %+v, %+v, %v", p, args, err)
	}
	if exp, _ := o.Expiry(); !exp.Equal(t0.Add(DefaultCommandTTL)) {
		t.Errorf("expiry = %v, want %v", exp, t0.Add(DefaultCommandTTL))
	}
}

// FuzzCBORPayload checks that any CBOR toJSON accepts converts back
// (toCBOR) to an item that converts to the same JSON: the conversion loses
// nothing.
func FuzzCBORPayload(f *testing.F) {
	o := signedCommand(f, OpSetMode, &SetModeArgs{Mode: "sleep"})
	j, _ := o.MarshalJSON()
	c, _ := toCBOR(j)
	f.Add(c)
	f.Add([]byte{0xa1, 0x61, 0x61, 0x01})
	f.Add([]byte{0xa1, 0x61, 0x61, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := toJSON(b)
		if err != nil {
			return
		}
		c, err := toCBOR(j)
		if err != nil {
			t.Fatalf("toCBOR(%s): %v", j, err)
		}
		j2, err := toJSON(c)
		if err != nil || !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s → %s, %v", j, j2, err)
		}
	})
}
