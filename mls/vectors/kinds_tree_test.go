package vectors

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTreeKindsCanFail changes one expected value in a case of each of
// the tree and message kinds (tree-math, deserialization, messages,
// tree-operations, tree-validation, treekem) and checks that the case
// fails, so that a passing run means something.
func TestTreeKindsCanFail(t *testing.T) {
	// flipHex changes the last hex digit of a string field.
	flipHex := func(c fields, field string) {
		var s string
		if err := json.Unmarshal(c[field], &s); err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		last := "0"
		if strings.HasSuffix(s, "0") {
			last = "1"
		}
		b, _ := json.Marshal(s[:len(s)-1] + last)
		c[field] = b
	}
	tests := []struct {
		file, kind string
		tamper     func(c fields)
	}{
		{"tree-math.json", "tree-math", func(c fields) { c["root"] = json.RawMessage("2") }},
		{"deserialization.json", "deserialization", func(c fields) { c["length"] = json.RawMessage("1") }},
		{"messages.cs1.json", "messages", func(c fields) { flipHex(c, "commit") }},
		{"tree-operations.json", "tree-operations", func(c fields) { flipHex(c, "tree_hash_after") }},
		{"tree-validation.cs1.json", "tree-validation", func(c fields) { flipHex(c, "tree") }},
		{"treekem.cs1.json", "treekem", func(c fields) {
			var ups []map[string]json.RawMessage
			if err := json.Unmarshal(c["update_paths"], &ups); err != nil {
				t.Fatal(err)
			}
			flipHex(fields(ups[0]), "commit_secret")
			c["update_paths"], _ = json.Marshal(ups)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			good := mustCase(t, tt.file)
			if r := runCase(tt.file, 0, good); r.Status != Pass || r.Kind != tt.kind {
				t.Fatalf("untampered case: %v", r)
			}
			bad := clone(t, good)
			tt.tamper(bad)
			if r := runCase(tt.file, 0, bad); r.Status != Fail {
				t.Errorf("tampered case: %v, want a failure", r)
			}
		})
	}
}
