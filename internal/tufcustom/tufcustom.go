// Package tufcustom is what Torpor adds to a TUF target: the "torpor"
// member of its custom object (TUF specification Section 4.5, targets
// metadata: "custom"). torporctl writes it when it signs a target
// (update sign-target) and the device's update client (runtime/update)
// reads it, both through this one type, so that the two cannot disagree
// on a member; torporctl links no runtime package, so the type lives
// below both.
//
// Use:
//
//	c := tufcustom.Custom{Version: 7, GOARCH: "arm", GOARM: "6", Window: "22:00-02:00"}
//	err := tufsign.AddTarget(targets, name, data, tufcustom.Key, c) // the owner's side
//	ok := c.Fits(dev) && c.InWindow(now)                          // the device's side
//
// docs/updates.md describes each member for the owner.
package tufcustom

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Key is the member of a target's "custom" object that holds Custom.
const Key = "torpor"

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
	// Encoding is "" for a target that is the file itself, or
	// EncodingGzip (RFC 1952) for one that decompresses to it; Size is
	// then the decompressed file's length, which bounds the
	// decompression.
	Encoding string `json:"encoding,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// Type is what the target is: "" for a build of torpor-agent (the A/B
	// slots install it), TypeRauc for an operating-system bundle that
	// `rauc install` installs (runtime/update/rauc). A device's check
	// considers only the targets of its own type.
	Type string `json:"type,omitempty"`
	// Deltas are diffs to this target (one with no Encoding) from builds
	// devices may run: a device running the build whose SHA-256 is a
	// Delta's From fetches that delta instead and patches its build with
	// it. The result must have the target's length and hashes.
	Deltas []Delta `json:"deltas,omitempty"`
}

// TypeRauc is Custom.Type of a RAUC bundle (https://rauc.readthedocs.io/).
const TypeRauc = "rauc-bundle"

// EncodingGzip is Custom.Encoding of a gzip-compressed target.
const EncodingGzip = "gzip"

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

// MaxDeltaWindow is the largest window a delta's zstd frame may use: the
// devices accept no larger one, which bounds the memory patching takes
// besides the two builds, so the two builds together must fit it.
const MaxDeltaWindow = 64 << 20

// Device is what a target must fit: the device's board profile and the
// architecture its agent was built for.
type Device struct {
	Board  string
	GOARCH string
	GOARM  string
}

// Fits reports whether the target is built for d.
func (c Custom) Fits(d Device) bool {
	return (c.Board == "" || c.Board == d.Board) && c.GOARCH == d.GOARCH && c.GOARM == d.GOARM
}

// InWindow reports whether now falls in the install window; a window
// CheckWindow refuses is never open.
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

// CheckWindow returns an error when w is neither "any" (or "") nor
// "HH:MM-HH:MM".
func CheckWindow(w string) error {
	_, _, err := parseWindow(w)
	return err
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
