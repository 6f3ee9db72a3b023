package update

import (
	"encoding/json"
	"fmt"

	"github.com/torpor-dev/torpor/runtime/update/tuf"

	"github.com/torpor-dev/torpor/internal/tufcustom"
)

// CustomKey is the member of a target's "custom" object (TUF specification
// Section 4.5, targets metadata: "custom") that holds Custom.
const CustomKey = tufcustom.Key

// Custom is what Torpor adds to a target (internal/tufcustom, the one
// type torporctl writes too).
type Custom = tufcustom.Custom

// Delta is a diff to a target from one build (tufcustom.Delta; delta.go
// fetches and applies it).
type Delta = tufcustom.Delta

// Device is the hardware the agent runs on: what a target must fit
// (Custom.Fits).
type Device = tufcustom.Device

// The values of Custom's Type and Encoding, and a delta's dictionary id.
const (
	TypeRauc     = tufcustom.TypeRauc
	EncodingGzip = tufcustom.EncodingGzip
	DeltaDictID  = tufcustom.DeltaDictID
)

// MaxDeltas bounds a target's deltas.
const MaxDeltas = 16

// CustomOf returns the Custom of target t, with an error when it has none
// or it is malformed.
func CustomOf(t *tuf.TargetFile) (Custom, error) {
	var c Custom
	if len(t.Custom) == 0 {
		return c, fmt.Errorf("target %q has no custom fields", t.Path)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(t.Custom, &all); err != nil {
		return c, fmt.Errorf("target %q: custom: %w", t.Path, err)
	}
	raw, ok := all[CustomKey]
	if !ok {
		return c, fmt.Errorf("target %q has no %q custom member", t.Path, CustomKey)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("target %q: custom %q: %w", t.Path, CustomKey, err)
	}
	if c.Version == 0 || c.GOARCH == "" {
		return c, fmt.Errorf("target %q: custom %q needs a version and a goarch", t.Path, CustomKey)
	}
	if c.Encoding != "" && (c.Encoding != EncodingGzip || c.Size <= 0) {
		return c, fmt.Errorf("target %q: encoding %q with size %d: want none, or gzip with the decompressed size", t.Path, c.Encoding, c.Size)
	}
	if err := tufcustom.CheckWindow(c.Window); err != nil {
		return c, fmt.Errorf("target %q: %w", t.Path, err)
	}
	if c.Type != "" && c.Type != TypeRauc {
		return c, fmt.Errorf("target %q: type %q: want none (torpor-agent) or %q", t.Path, c.Type, TypeRauc)
	}
	if err := checkDeltas(c, t.Length); err != nil {
		return c, fmt.Errorf("target %q: %w", t.Path, err)
	}
	return c, nil
}

// checkDeltas checks the deltas of a target of length n.
func checkDeltas(c Custom, n int64) error {
	if len(c.Deltas) == 0 {
		return nil
	}
	if c.Encoding != "" || len(c.Deltas) > MaxDeltas {
		return fmt.Errorf("%d deltas with encoding %q: want at most %d, to a target with no encoding", len(c.Deltas), c.Encoding, MaxDeltas)
	}
	for _, d := range c.Deltas {
		if !isSHA256(d.From) || !isSHA256(d.SHA256) || d.Length <= 0 || d.Length > n {
			return fmt.Errorf("delta from %q: want the SHA-256 (hex) of its build and its own, and a length of 1 to the target's %d bytes (it has %d)", d.From, n, d.Length)
		}
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
