package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// Version is the only scope algebra version this package knows.
const Version = "lap-scope-v0"

// Scope is one grant of an envelope.
type Scope struct {
	V   string `json:"v"`
	Act string `json:"act"`
	Res string `json:"res"`
	// Cap is nil when the scope sets no cap.
	Cap *Cap `json:"cap,omitempty"`
	// CP is nil when the scope names no counterparties (any counterparty).
	CP *Counterparties `json:"cp,omitempty"`
	// Depth is the remaining delegation depth; nil is read as 0 (the
	// narrower reading: a scope that declares no depth cannot be delegated).
	Depth *int `json:"depth,omitempty"`
	// DecayMaxSec is nil when the scope sets no decay window.
	DecayMaxSec *int64 `json:"decay_max_sec,omitempty"`
}

// Cap is the two-dimensional cap: a per-transaction ceiling and a
// cumulative budget over Window, both in Unit.
type Cap struct {
	MaxPerTx      int64  `json:"max_per_tx"`
	MaxCumulative int64  `json:"max_cumulative"`
	Unit          string `json:"unit"`
	Window        string `json:"window"`
}

// Counterparties are explicit allow and deny sets of counterparty
// identifiers (DIDs). An empty Allow allows every counterparty not denied.
type Counterparties struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// The reasons a scope or envelope is refused.
var (
	// ErrUnknownVersion: the scope's v is not Version.
	ErrUnknownVersion = errors.New("envelope: unknown scope algebra version")
	// ErrMalformed: the scope does not parse or breaks the grammar.
	ErrMalformed = errors.New("envelope: malformed scope")
)

// ParseScope reads one scope strictly: one I-JSON text (internal/strictjson),
// no member this package does not define, and a version it knows.
func ParseScope(b []byte) (Scope, error) {
	var s Scope
	if err := decodeStrict(b, &s); err != nil {
		return Scope{}, err
	}
	return s, s.Validate()
}

// ParseEnvelope reads an envelope, a JSON array of scopes, as ParseScope
// reads each.
func ParseEnvelope(b []byte) ([]Scope, error) {
	var env []Scope
	if err := decodeStrict(b, &env); err != nil {
		return nil, err
	}
	if len(env) == 0 {
		return nil, fmt.Errorf("%w: an envelope holds at least one scope", ErrMalformed)
	}
	for i := range env {
		if err := env[i].Validate(); err != nil {
			return nil, fmt.Errorf("scope %d: %w", i, err)
		}
	}
	return env, nil
}

func decodeStrict(b []byte, v any) error {
	if err := strictjson.Check(b); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// Validate checks the scope's grammar: its version, that act and res are
// well formed, and that numbers are not negative.
func (s Scope) Validate() error {
	if s.V != Version {
		return fmt.Errorf("%w: %q", ErrUnknownVersion, s.V)
	}
	if s.Act == "" {
		return fmt.Errorf("%w: act is empty", ErrMalformed)
	}
	if _, err := parseResource(s.Res); err != nil {
		return err
	}
	if c := s.Cap; c != nil {
		if c.MaxPerTx < 0 || c.MaxCumulative < 0 || c.Unit == "" {
			return fmt.Errorf("%w: cap needs a unit and non-negative amounts", ErrMalformed)
		}
		if _, ok := windowRank[c.Window]; !ok {
			return fmt.Errorf("%w: unknown cap window %q", ErrMalformed, c.Window)
		}
	}
	if (s.Depth != nil && *s.Depth < 0) || (s.DecayMaxSec != nil && *s.DecayMaxSec < 0) {
		return fmt.Errorf("%w: negative depth or decay_max_sec", ErrMalformed)
	}
	return nil
}
