package tufcustom_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/tufcustom"
)

// TestCustomJSON: the members a target's "torpor" object has, as devices
// of earlier releases read them and owners' targets metadata holds them;
// every member of Custom is set with a value of its own, and the JSON
// reads back the same.
func TestCustomJSON(t *testing.T) {
	in := tufcustom.Custom{Version: 7, Board: "rpi-4", GOARCH: "arm", GOARM: "6", Window: "22:00-02:00",
		Confirm: true, MinSupplyMV: 4900, Encoding: tufcustom.EncodingGzip, Size: 1 << 20, Type: tufcustom.TypeRauc,
		Deltas: []tufcustom.Delta{{From: "f", SHA256: "s", Length: 3}}}
	const want = `{"version":7,"board":"rpi-4","goarch":"arm","goarm":"6","window":"22:00-02:00","confirm":true,` +
		`"minSupplyMv":4900,"encoding":"gzip","size":1048576,"type":"rauc-bundle","deltas":[{"from":"f","sha256":"s","length":3}]}`
	b, err := json.Marshal(in)
	if err != nil || string(b) != want {
		t.Fatalf("json.Marshal(%+v) = %s, %v; want %s", in, b, err, want)
	}
	var got tufcustom.Custom
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", b, got, err, in)
	}
	if b, _ := json.Marshal(tufcustom.Custom{Version: 1, GOARCH: "arm64"}); string(b) != `{"version":1,"goarch":"arm64"}` {
		t.Errorf("the least target's custom = %s; want only version and goarch", b)
	}
}

// TestInWindow: a window opens at its first minute, closes at its last,
// may wrap midnight, and one that does not parse is never open.
func TestInWindow(t *testing.T) {
	day := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		window string
		at     time.Duration
		open   bool
	}{
		{"", 3 * time.Hour, true},
		{"any", 3 * time.Hour, true},
		{"22:00-02:00", 23 * time.Hour, true},
		{"22:00-02:00", time.Hour, true},
		{"22:00-02:00", 2 * time.Hour, false},
		{"01:00-03:00", time.Hour, true},
		{"01:00-03:00", 3 * time.Hour, false},
		{"1:00-03:00", 2 * time.Hour, false},
	}
	for _, tt := range tests {
		if got := (tufcustom.Custom{Window: tt.window}).InWindow(day.Add(tt.at)); got != tt.open {
			t.Errorf("Custom{Window: %q}.InWindow(%v) = %v, want %v", tt.window, tt.at, got, tt.open)
		}
		if err := tufcustom.CheckWindow(tt.window); (err == nil) != (tt.window != "1:00-03:00") {
			t.Errorf("CheckWindow(%q) = %v", tt.window, err)
		}
	}
}
