package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const relayVectorDir = "../testdata/vectors/atom/offline-delivery"

// TestRelayKindsPass runs every asleep-http-response and Agent Card vector
// through the real relay and checks that each passes.
func TestRelayKindsPass(t *testing.T) {
	rep, err := Run(relayVectorDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"asleep-http-response": 8, "agent-card-extension": 6, "agent-card-build": 1}
	ran := map[string]int{}
	for _, o := range rep.Results {
		if _, ok := want[o.Kind]; !ok {
			continue
		}
		ran[o.Kind]++
		if o.Status != Pass {
			t.Errorf("%s %s: expected=%s got=%s (%s)", o.Status, o.ID, o.Expected, o.Got, o.Note)
		}
	}
	for k, n := range want {
		if ran[k] != n {
			t.Errorf("ran %d %s vectors, want %d", ran[k], k, n)
		}
	}
}

// TestRelayKindsDetectWrongExpectations changes what vectors expect and
// checks that the kinds then fail: they compare, they do not echo.
func TestRelayKindsDetectWrongExpectations(t *testing.T) {
	tests := []struct {
		name, file string
		change     func(v map[string]any)
	}{
		{"od-010 expects 200", "od-010.json", func(v map[string]any) { v["expect"].(map[string]any)["statusCode"] = 200 }},
		{"od-015 expects queued", "od-015.json", func(v map[string]any) { v["expect"].(map[string]any)["queued"] = true }},
		{"od-020 second expects peer", "od-020.json", func(v map[string]any) {
			v["expect"].(map[string]any)["second"].(map[string]any)["kind"] = "peer"
		}},
		{"od-012 outside the window", "od-012.json", func(v map[string]any) { v["now"] = "2026-01-15T12:41:00.000Z" }},
		{"od-014 as sleep", "od-014.json", func(v map[string]any) { v["config"].(map[string]any)["mode"] = "sleep" }},
		{"od-010 from Bob", "od-010.json", func(v map[string]any) {
			v["expect"].(map[string]any)["fromDid"] = "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"
		}},
		{"od-020 second from Alice", "od-020.json", func(v map[string]any) {
			v["expect"].(map[string]any)["second"].(map[string]any)["fromDid"] = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
		}},
		{"od-010 unknown member", "od-010.json", func(v map[string]any) { v["expect"].(map[string]any)["queuedAt"] = "12:00" }},
		{"od-020 first unknown member", "od-020.json", func(v map[string]any) {
			v["expect"].(map[string]any)["first"].(map[string]any)["seq"] = 1
		}},
		{"od-004 unknown member", "od-004.json", func(v map[string]any) { v["expect"].(map[string]any)["retryAfterSecMax"] = 3600 }},
		{"od-030 unknown member", "od-030.json", func(v map[string]any) { v["expect"].(map[string]any)["listCountMax"] = 1 }},
		{"card-od-003 expects ok", "card-od-003.json", func(v map[string]any) { v["expect"].(map[string]any)["schemaOk"] = true }},
		{"card-od-007 expects no extension", "card-od-007.json", func(v map[string]any) {
			v["cases"].([]any)[0].(map[string]any)["expectExtension"] = false
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			changedVectors(t, dir, tt.change, tt.file)
			rep, err := Run(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || rep.Results[0].Status != Fail {
				t.Fatalf("changed vector: %+v, want one FAIL", rep.Results)
			}
			if strings.Contains(tt.name, "unknown member") && !strings.Contains(rep.Results[0].Note, "not understood") {
				t.Errorf("note %q does not say which member was not understood", rep.Results[0].Note)
			}
		})
	}
}

// TestFromDidChecked: the queued record's sender, which the relay took from
// the DID Bearer token, is what fromDid expects: Alice's for od-010 and
// od-011, whose caller she is.
func TestFromDidChecked(t *testing.T) {
	dir := t.TempDir()
	changedVectors(t, dir, func(v map[string]any) {
		v["expect"].(map[string]any)["fromDid"] = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	}, "od-010.json", "od-011.json")
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	for _, o := range rep.Results {
		if o.Status != Pass || !strings.Contains(o.Got, "fromDid=did:key:z6Mkjchh") {
			t.Errorf("%s %s: expected=%s got=%s (%s)", o.Status, o.ID, o.Expected, o.Got, o.Note)
		}
	}
}

// changedVectors writes the offline-delivery manifest and files, each
// changed by change, to dir.
func changedVectors(t *testing.T, dir string, change func(v map[string]any), files ...string) {
	t.Helper()
	for _, f := range append([]string{"manifest.json"}, files...) {
		b, err := os.ReadFile(filepath.Join(relayVectorDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f != "manifest.json" {
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			change(v)
			b, _ = json.Marshal(v)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
