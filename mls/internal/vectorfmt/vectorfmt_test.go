package vectorfmt

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestHexBytes(t *testing.T) {
	var v struct{ A, B HexBytes }
	if err := json.Unmarshal([]byte(`{"A": "00ff", "B": null}`), &v); err != nil {
		t.Fatal(err)
	}
	if string(v.A) != "\x00\xff" || v.B != nil {
		t.Errorf("decoded %x, %x", v.A, v.B)
	}
	if err := json.Unmarshal([]byte(`{"A": "0g"}`), &v); err == nil {
		t.Error("a string that is not hex decoded")
	}
	if b, err := json.Marshal(HexBytes{1, 0xab}); err != nil || string(b) != `"01ab"` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

// TestLoad reads every vector file of mls/testdata that has a case type
// here and checks that it holds cases.
func TestLoad(t *testing.T) {
	load := map[string]func(string) (int, error){
		"crypto-basics.cs1.json":                  count[CryptoBasics],
		"deserialization.json":                    count[Deserialization],
		"key-schedule.cs1.json":                   count[KeySchedule],
		"message-protection.cs1.json":             count[MessageProtection],
		"messages.cs1.json":                       count[Messages],
		"passive-client-handling-commit.cs1.json": count[PassiveClient],
		"passive-client-welcome.cs1.json":         count[PassiveClient],
		"psk_secret.cs1.json":                     count[PSKSecret],
		"secret-tree.cs1.json":                    count[SecretTree],
		"transcript-hashes.cs1.json":              count[TranscriptHashes],
		"tree-math.json":                          count[TreeMath],
		"tree-operations.json":                    count[TreeOperations],
		"tree-validation.cs1.json":                count[TreeValidation],
		"treekem.cs1.json":                        count[TreeKEM],
		"welcome.cs1.json":                        count[Welcome],
	}
	for name, f := range load {
		n, err := f(filepath.Join("..", "..", "testdata", name))
		if err != nil || n == 0 {
			t.Errorf("%s: %d cases, %v", name, n, err)
		}
	}
	if _, err := Load[TreeMath]("no such file"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func count[T any](path string) (int, error) {
	cases, err := Load[T](path)
	return len(cases), err
}
