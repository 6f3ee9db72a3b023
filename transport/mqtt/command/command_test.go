package command

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func signedCommand(t testing.TB, op string, args any) *governed.Object {
	t.Helper()
	o, err := Sign(didtest.Key(t, 1), Spec{Device: didtest.Key(t, 2).DID(), Seq: 7, Op: op, Args: args, IssuedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	return o
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
		{OpTime, `{"floor":"2026-06-01T12:00:00Z"}`, &TimeArgs{Floor: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}, ""},
		{OpTime, `{}`, nil, "floor must be a time"},
		{"format-disk", `{}`, nil, "unknown operation"},
		{OpRefillKeyPackages, `{"count":256}`, &RefillArgs{Count: 256}, ""},
		{OpRefillKeyPackages, `{"count":2000000}`, nil, "count 2000000 outside 0..256"},
		{OpRefillKeyPackages, `{"count":-1}`, nil, "count -1 outside 0..256"},
		{OpRefillKeyPackages, `{"count":1,"count":2000000}`, nil, `duplicate member "count"`},
		{OpSetMode, `{"mode":"sleep","mode":"always_on"}`, nil, `duplicate member "mode"`},
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

func TestSignChecksArguments(t *testing.T) {
	k := didtest.Key(t, 1)
	dev := didtest.Key(t, 2).DID()
	tests := []struct {
		name string
		spec Spec
	}{
		{"no device", Spec{Seq: 1, Op: OpStatus, IssuedAt: t0}},
		{"seq 0", Spec{Device: dev, Op: OpStatus, IssuedAt: t0}},
		{"bad args", Spec{Device: dev, Seq: 1, Op: OpSetMode, Args: &SetModeArgs{Mode: "x"}, IssuedAt: t0}},
		{"unknown op", Spec{Device: dev, Seq: 1, Op: "explode", IssuedAt: t0}},
	}
	for _, tt := range tests {
		if _, err := Sign(k, tt.spec); err == nil {
			t.Errorf("Sign(%s) succeeded", tt.name)
		}
	}
	o := signedCommand(t, OpConfirm, &HoldArgs{Hold: "h1"})
	p, args, err := ParsePayload(o)
	if err != nil || p.Seq != 7 || p.Device != dev.String() || args.(*HoldArgs).Hold != "h1" {
		t.Errorf("ParsePayload = %+v, %+v, %v", p, args, err)
	}
	if exp, _ := o.Expiry(); !exp.Equal(t0.Add(DefaultTTL)) {
		t.Errorf("expiry = %v, want %v", exp, t0.Add(DefaultTTL))
	}
}

func TestOrder(t *testing.T) {
	a, b := didtest.Key(t, 1), didtest.Key(t, 3)
	dev := didtest.Key(t, 2).DID()
	mk := func(k *did.PrivateKey, seq uint64, at time.Duration) *mqtt.Delivery {
		o, err := Sign(k, Spec{Device: dev, Seq: seq, Op: OpStatus, IssuedAt: t0.Add(at * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		return &mqtt.Delivery{Object: o}
	}
	bad := &mqtt.Delivery{Err: &mqtt.Unreadable{Reason: "malformed", Detail: "x"}}
	// Operator a's commands arrive 3, 1, 2; b's 2, 1; one junk message.
	in := []*mqtt.Delivery{mk(a, 3, 3), mk(b, 20, 5), mk(a, 1, 1), bad, mk(a, 2, 2), mk(b, 10, 0)}
	var got []string
	for _, d := range Order(in) {
		if d.Object == nil {
			got = append(got, "bad")
			continue
		}
		name := "a"
		if d.Object.Issuer == b.DID() {
			name = "b"
		}
		got = append(got, fmt.Sprintf("%s-%d", name, ClaimedSeq(d.Object)))
	}
	want := []string{"bad", "b-10", "a-1", "a-2", "a-3", "b-20"}
	if !cmp.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
}
