package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update"
)

// TestTargetCustomIsTheDevices: torporctl writes a target's "torpor"
// member with its own copy of runtime/update.Custom (torporctl links no
// runtime package). Every field written, with a value of its own, reads
// back into the device's Custom, and the two have the same members, so
// that a field added to one side and not the other fails here rather
// than on a device.
func TestTargetCustomIsTheDevices(t *testing.T) {
	in := targetCustom{Version: 7, Board: "rpi-4", GOARCH: "arm", GOARM: "6", Window: "22:00-02:00",
		Confirm: true, MinSupplyMV: 4900, Encoding: "gzip", Size: 1 << 20, Type: "rauc-bundle", Deltas: []deltaField{{From: "f", SHA256: "s", Length: 3}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got update.Custom
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := update.Custom{Version: 7, Board: "rpi-4", GOARCH: "arm", GOARM: "6", Window: "22:00-02:00",
		Confirm: true, MinSupplyMV: 4900, Encoding: "gzip", Size: 1 << 20, Type: update.TypeRauc, Deltas: []update.Delta{{From: "f", SHA256: "s", Length: 3}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("torporctl's %s reads on the device as %+v, want %+v", b, got, want)
	}
	tags := func(v any) map[string]bool {
		m := map[string]bool{}
		for f := range reflect.TypeOf(v).Fields() {
			m[f.Tag.Get("json")] = true
		}
		return m
	}
	if a, d := tags(targetCustom{}), tags(update.Custom{}); !reflect.DeepEqual(a, d) {
		t.Errorf("torporctl's members %v, the device's %v", a, d)
	}
	if a, d := tags(deltaField{}), tags(update.Delta{}); !reflect.DeepEqual(a, d) {
		t.Errorf("torporctl's delta members %v, the device's %v", a, d)
	}
}
