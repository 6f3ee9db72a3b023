package update

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// CustomKey is the member of a target's "custom" object (TUF specification
// Section 4.5, targets metadata: "custom") that holds Custom.
const CustomKey = "torpor"

// Custom is what Torpor adds to a target, in the "torpor" member of its
// custom object. The conditions take the SUIT update-management
// extensions as their model (https://datatracker.ietf.org/doc/draft-ietf-suit-update-management/:
// version, hardware, a wait for a window, the user's authorisation, the
// power level).
type Custom struct {
	// Version is the build's version; the device installs only a target
	// whose Version is greater than the installed one.
	Version uint64 `json:"version"`
	// Board is the board profile the target fits; "" fits every board.
	Board string `json:"board,omitempty"`
	// GOARCH and GOARM are the architecture the binary was built for.
	GOARCH string `json:"goarch"`
	GOARM  string `json:"goarm,omitempty"`
	// Window is "any" (or "") or "HH:MM-HH:MM" in UTC by the device's
	// trusted time; a window may wrap midnight ("22:00-02:00").
	Window string `json:"window,omitempty"`
	// Confirm is true when the owner must confirm the install.
	Confirm bool `json:"confirm,omitempty"`
	// MinSupplyMV is the lowest supply voltage, in millivolts, at which
	// the device installs it, where the board reports its supply; 0
	// means no minimum.
	MinSupplyMV int64 `json:"minSupplyMv,omitempty"`
	// Encoding is "" for a target that is the file itself, or "gzip"
	// (RFC 1952) for one that decompresses to it; Size is then the
	// decompressed file's length, which bounds the decompression.
	Encoding string `json:"encoding,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// Type is what the target is: "" for a build of torpor-agent (the A/B
	// slots install it), TypeRauc for an operating-system bundle that
	// `rauc install` installs (runtime/update/rauc). A check considers
	// only the targets of its Config.Type.
	Type string `json:"type,omitempty"`
	// Deltas are diffs to this target (one with no Encoding) from builds
	// devices may run: a device running the build whose SHA-256 is a
	// Delta's From fetches that delta instead and patches its build with
	// it (delta.go). The result must have the target's length and hashes.
	Deltas []Delta `json:"deltas,omitempty"`
}

// TypeRauc is Custom.Type of a RAUC bundle (https://rauc.readthedocs.io/).
const TypeRauc = "rauc-bundle"

// Delta is a diff to a target from one build: a zstd frame (RFC 8878)
// whose dictionary (id DeltaDictID) is the raw content of that build
// (RFC 8878 Section 5: a raw-content dictionary), as `zstd --patch-from`
// makes them. Its bytes are signed by their length and SHA-256 here.
type Delta struct {
	// From is the SHA-256 (hex) of the build the delta applies to.
	From string `json:"from"`
	// SHA256 and Length are the delta's own.
	SHA256 string `json:"sha256"`
	Length int64  `json:"length"`
}

// DeltaDictID is the dictionary id a delta's zstd frame names.
const DeltaDictID = 1

// MaxDeltas bounds a target's deltas.
const MaxDeltas = 16

// EncodingGzip is Custom.Encoding of a gzip-compressed target.
const EncodingGzip = "gzip"

// Device is the hardware the agent runs on.
type Device struct {
	Board  string
	GOARCH string
	GOARM  string
}

// CustomOf returns the Custom of target t, with an error when it has none
// or it is malformed.
func CustomOf(t *metadata.TargetFiles) (Custom, error) {
	var c Custom
	if t.Custom == nil {
		return c, fmt.Errorf("target %q has no custom fields", t.Path)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(*t.Custom, &all); err != nil {
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
	if _, _, err := parseWindow(c.Window); err != nil {
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

// Fits reports whether the target is built for d.
func (c Custom) Fits(d Device) bool {
	return (c.Board == "" || c.Board == d.Board) && c.GOARCH == d.GOARCH && c.GOARM == d.GOARM
}

// InWindow reports whether now falls in the install window.
func (c Custom) InWindow(now time.Time) bool {
	from, to, err := parseWindow(c.Window)
	if err != nil {
		return false
	}
	if from == to {
		return true
	}
	now = now.UTC()
	m := now.Hour()*60 + now.Minute()
	if from < to {
		return m >= from && m < to
	}
	return m >= from || m < to
}

// parseWindow returns the window's bounds in minutes of the UTC day;
// from == to means any time.
func parseWindow(w string) (from, to int, err error) {
	if w == "" || w == "any" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(w, "-")
	if !ok {
		return 0, 0, fmt.Errorf("window %q: want \"any\" or HH:MM-HH:MM", w)
	}
	if from, err = minuteOf(a); err == nil {
		to, err = minuteOf(b)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("window %q: %w", w, err)
	}
	return from, to, nil
}

func minuteOf(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(h) != 2 || len(m) != 2 || hh > 23 || mm > 59 || hh < 0 || mm < 0 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return hh*60 + mm, nil
}
