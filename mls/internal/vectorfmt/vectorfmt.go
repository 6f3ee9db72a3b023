// Package vectorfmt defines, once, the JSON schemas of the MLS working
// group's interoperability test vectors (github.com/mlswg/mls-implementations,
// test-vectors/*.json, described in mls/testdata/FORMAT.md), for the runner
// in mls/vectors and the unit tests of mls and its internal packages.
//
// Each type is one case of a vector file; a file is a JSON array of cases.
// Byte strings are hex strings (HexBytes). Field names are the vectors'.
package vectorfmt

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
)

// HexBytes is a JSON hex string; JSON null decodes to nil (an optional<T>
// left out).
type HexBytes []byte

// UnmarshalJSON decodes a hex string, or null.
func (h *HexBytes) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*h = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// MarshalJSON encodes h as a hex string.
func (h HexBytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(hex.EncodeToString(h))
}

// Load reads the vector file at path: a JSON array of cases of type T.
func Load[T any](path string) ([]T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []T
	if err := json.Unmarshal(b, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cases, nil
}
