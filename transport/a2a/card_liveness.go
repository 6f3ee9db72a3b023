package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"time"
)

// ExtLiveness is Torpor's extension that ties the card to the agent's
// liveness: the latest pulse the agent published (pulse) and the
// next window in which it expects to be reachable. Its params are
// Liveness. Agents up to commit d2faa43 signed it into the card of every
// wake; later ones leave it out, so that the card stays the same from
// wake to wake and is not sent again (the pulse itself, served at
// PulsePath, names the next wake). Relays still check it in the cards of
// older agents (docs/agent.md, "Liveness extension").
const ExtLiveness = "https://github.com/torpor-dev/torpor/blob/main/docs/agent.md#liveness-extension"

// PulsePath is where an agent's latest pulse is served, relative to the
// agent's base URL (the card's BaseURL).
const PulsePath = "/pulse"

// windowStartFormat is how NextWindow.Start is written: RFC 3339 in UTC,
// whole seconds.
const windowStartFormat = "2006-01-02T15:04:05Z"

// Liveness is the ExtLiveness params:
//
//	{"nextWindow": {"start": "2026-01-15T13:11:00Z", "lengthSeconds": 300},
//	 "pulse": {"seq": 42, "hash": "<base64url SHA-256>", "url": "https://relay.example/a/did:key:…/pulse"}}
type Liveness struct {
	// NextWindow is the next window the agent announced; nil when none is
	// planned (always_on and session are always reachable; sleep without a
	// scheduled wake waits for an event).
	NextWindow *NextWindow
	// Pulse names the latest pulse.
	Pulse PulseRef
}

// NextWindow is a window in which the agent will be awake and linked.
type NextWindow struct {
	// Start is written as RFC 3339 in UTC with whole seconds ("start");
	// fractions of a second are dropped.
	Start time.Time
	// Length is written in whole seconds ("lengthSeconds"), at least one.
	Length time.Duration
}

// PulseRef names one pulse of the agent's chain as pulse defines
// it.
type PulseRef struct {
	// Seq is the pulse's sequence number, from 1.
	Seq uint64
	// Hash is the chain hash of the pulse document (pulse.Hash):
	// the unpadded base64url SHA-256 of its canonical bytes.
	Hash string
	// URL is where the pulse is served: the agent's base URL + PulsePath.
	URL string
}

// livenessWire is the JSON form; pointers tell a missing member from a
// zero one.
type livenessWire struct {
	NextWindow *windowWire `json:"nextWindow,omitempty"`
	Pulse      *pulseWire  `json:"pulse"`
}

type windowWire struct {
	Start         *string `json:"start"`
	LengthSeconds *int64  `json:"lengthSeconds"`
}

type pulseWire struct {
	Seq  *uint64 `json:"seq"`
	Hash *string `json:"hash"`
	URL  *string `json:"url"`
}

// MarshalJSON implements json.Marshaler. It refuses a Liveness that
// UnmarshalJSON would refuse.
func (l Liveness) MarshalJSON() ([]byte, error) {
	p := l.Pulse
	w := livenessWire{Pulse: &pulseWire{Seq: &p.Seq, Hash: &p.Hash, URL: &p.URL}}
	if l.NextWindow != nil {
		start := l.NextWindow.Start.UTC().Format(windowStartFormat)
		secs := int64(l.NextWindow.Length / time.Second)
		w.NextWindow = &windowWire{Start: &start, LengthSeconds: &secs}
	}
	if _, err := w.liveness(); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler, strictly: every member
// present and no other, seq at least 1, hash a base64url SHA-256, url an
// absolute http(s) URL ending in PulsePath, start RFC 3339 UTC in whole
// seconds, lengthSeconds at least 1. Errors are *CardError wrapping
// ErrExtensionSchema.
func (l *Liveness) UnmarshalJSON(b []byte) error {
	var w livenessWire
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return livenessErr("%v", err)
	}
	if len(bytes.TrimSpace(b[d.InputOffset():])) != 0 {
		return livenessErr("data after the params object")
	}
	v, err := w.liveness()
	if err != nil {
		return err
	}
	*l = v
	return nil
}

func (w livenessWire) liveness() (Liveness, error) {
	var l Liveness
	p := w.Pulse
	switch {
	case p == nil:
		return l, livenessErr("pulse is required")
	case p.Seq == nil || *p.Seq == 0:
		return l, livenessErr("pulse.seq must be a sequence number from 1")
	case p.Hash == nil || !isSHA256(*p.Hash):
		return l, livenessErr("pulse.hash must be the unpadded base64url SHA-256 of the pulse")
	case p.URL == nil:
		return l, livenessErr("pulse.url is required")
	}
	if err := checkPulseURL(*p.URL); err != nil {
		return l, err
	}
	l.Pulse = PulseRef{Seq: *p.Seq, Hash: *p.Hash, URL: *p.URL}
	if w.NextWindow == nil {
		return l, nil
	}
	nw := w.NextWindow
	if nw.Start == nil {
		return l, livenessErr("nextWindow.start is required")
	}
	start, err := time.Parse(windowStartFormat, *nw.Start)
	if err != nil || start.Format(windowStartFormat) != *nw.Start {
		return l, livenessErr("nextWindow.start %q is not RFC 3339 in UTC with whole seconds (%s)", *nw.Start, windowStartFormat)
	}
	if nw.LengthSeconds == nil || *nw.LengthSeconds < 1 {
		return l, livenessErr("nextWindow.lengthSeconds must be at least 1")
	}
	l.NextWindow = &NextWindow{Start: start, Length: time.Duration(*nw.LengthSeconds) * time.Second}
	return l, nil
}

func isSHA256(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == 32
}

func checkPulseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(u.Path, PulsePath) || u.RawQuery != "" || u.Fragment != "" {
		return livenessErr("pulse.url %q is not an http(s) URL ending in %s", s, PulsePath)
	}
	return nil
}

func livenessErr(format string, args ...any) error {
	return schemaErr("liveness: "+format, args...)
}

// Liveness returns what the card publishes in ExtLiveness, and whether it
// publishes it. Params that do not decode strictly are an error (a
// *CardError wrapping ErrExtensionSchema).
func (c *Card) Liveness() (Liveness, bool, error) {
	e, ok := c.Extension(ExtLiveness)
	if !ok {
		return Liveness{}, false, nil
	}
	var l Liveness
	if err := l.UnmarshalJSON(e.Params); err != nil {
		return Liveness{}, true, err
	}
	return l, true, nil
}
