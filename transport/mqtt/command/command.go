package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/canon"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/wake"
)

// The purpose and schema of a command object. Replies, statuses and events
// are transport/mqtt's (envelope.PurposeReply, ...).
const (
	Purpose = "torpor:command"
	Schema  = "https://torpor.dev/schemas/mqtt/command/v1"
)

// Rejection reasons, besides the receiver-check reasons of package governed
// (malformed, signature-invalid, signature-not-by-issuer, expired, replay,
// purpose-not-permitted) and envelope.ReasonUnsupportedContentType, which a
// reply carries as they are.
const (
	ReasonOperatorNotAllowed = "operator-not-allowed"
	ReasonWrongDevice        = "wrong-device"
	ReasonOutOfSequence      = "out-of-sequence"
	ReasonBadCommand         = "bad-command"
	// ReasonUnsupported is the failure reason of a command the device
	// cannot carry out (no such capability, or the wake source does not
	// allow it).
	ReasonUnsupported = "unsupported"
)

// The operations a command may ask for.
const (
	OpStatus            = "status"
	OpSetMode           = "set-mode"
	OpWakeNow           = "wake-now"
	OpDrain             = "drain"
	OpRotateKeys        = "rotate-keys"
	OpRefillKeyPackages = "refill-keypackages"
	OpConfirm           = "confirm"
	OpDeny              = "deny"
	OpReconcile         = "reconcile"
	OpHalt              = "halt"
	OpResume            = "resume"
	OpConfigGet         = "config-get"
	OpConfigSet         = "config-set"
	OpReboot            = "reboot"
	OpTime              = "time"
)

// Arguments of the operations. DecodeArgs returns a pointer to the type
// an op names (nil for status, drain and rotate-keys).
type (
	// SetModeArgs: set-mode. Mode is one of always_on, session,
	// hourly_wake, sleep. WindowSec and OffsetSec, when present, set the
	// hourly window's length and its offset within the hour. WakeAt, in
	// sleep mode only, schedules the one wake (the relay's Retry-After for
	// a sleeping agent comes from it).
	SetModeArgs struct {
		Mode      string     `json:"mode"`
		WindowSec *int64     `json:"windowSec,omitempty"`
		OffsetSec *int64     `json:"offsetSec,omitempty"`
		WakeAt    *time.Time `json:"wakeAt,omitempty"`
	}
	// WakeNowArgs: wake-now. ForSec is how long to stay awake, zero for
	// the device's window length.
	WakeNowArgs struct {
		ForSec int64 `json:"forSec,omitempty"`
	}
	// RefillArgs: refill-keypackages. Count is how many unused
	// KeyPackages the pool should hold, zero for the device's configured
	// pool size.
	RefillArgs struct {
		Count int `json:"count,omitempty"`
	}
	// HoldArgs: confirm and deny. Hold is the held action's ledger key.
	HoldArgs struct {
		Hold string `json:"hold"`
	}
	// ReconcileArgs: reconcile an indeterminate idempotency key against
	// its system of record. Happened says the effect took place (the key
	// completes with Receipt) or not (the key is released).
	ReconcileArgs struct {
		Key      string `json:"key"`
		Happened bool   `json:"happened"`
		Receipt  string `json:"receipt,omitempty"`
		EffectID string `json:"effectId,omitempty"`
		Note     string `json:"note,omitempty"`
	}
	// NoteArgs: halt and resume.
	NoteArgs struct {
		Note string `json:"note,omitempty"`
	}
	// ConfigArgs: config-get (Value nil) and config-set.
	ConfigArgs struct {
		Key   string  `json:"key"`
		Value *string `json:"value,omitempty"`
	}
	// RebootArgs: reboot. DelaySec postpones it.
	RebootArgs struct {
		DelaySec int64 `json:"delaySec,omitempty"`
	}
	// TimeArgs: time. Floor replaces the device's trusted-time floor,
	// earlier or later than the one it keeps (runtime/trusted's
	// SetFloor); only the device's owner may send it.
	TimeArgs struct {
		Floor time.Time `json:"floor"`
	}
)

// opArgs maps each operation to a constructor of its arguments (nil for
// operations without arguments) and a validator.
var opArgs = map[string]struct {
	new   func() any
	check func(any) error
}{
	OpStatus:            {},
	OpDrain:             {},
	OpRotateKeys:        {},
	OpSetMode:           {func() any { return new(SetModeArgs) }, checkSetMode},
	OpWakeNow:           {func() any { return new(WakeNowArgs) }, func(a any) error { return nonNegative("forSec", a.(*WakeNowArgs).ForSec) }},
	OpRefillKeyPackages: {func() any { return new(RefillArgs) }, func(a any) error { return inRange("count", int64(a.(*RefillArgs).Count), 0, session.MaxPoolSize) }},
	OpConfirm:           {func() any { return new(HoldArgs) }, checkHold},
	OpDeny:              {func() any { return new(HoldArgs) }, checkHold},
	OpReconcile:         {func() any { return new(ReconcileArgs) }, func(a any) error { return nonEmpty("key", a.(*ReconcileArgs).Key) }},
	OpHalt:              {func() any { return new(NoteArgs) }, nil},
	OpResume:            {func() any { return new(NoteArgs) }, nil},
	OpConfigGet:         {func() any { return new(ConfigArgs) }, checkConfigGet},
	OpConfigSet:         {func() any { return new(ConfigArgs) }, checkConfigSet},
	OpReboot:            {func() any { return new(RebootArgs) }, func(a any) error { return nonNegative("delaySec", a.(*RebootArgs).DelaySec) }},
	OpTime:              {func() any { return new(TimeArgs) }, checkTime},
}

// Ops lists every operation, in the order the documentation gives them.
var Ops = []string{OpStatus, OpSetMode, OpWakeNow, OpDrain, OpRotateKeys, OpRefillKeyPackages,
	OpConfirm, OpDeny, OpReconcile, OpHalt, OpResume, OpConfigGet, OpConfigSet, OpReboot, OpTime}

func checkSetMode(a any) error {
	s := a.(*SetModeArgs)
	if _, err := wake.ParseMode(s.Mode); err != nil {
		return err
	}
	if s.WindowSec != nil && (*s.WindowSec < 1 || *s.WindowSec > 3600) {
		return fmt.Errorf("windowSec %d outside 1..3600", *s.WindowSec)
	}
	if s.OffsetSec != nil && (*s.OffsetSec <= -3600 || *s.OffsetSec >= 3600) {
		return fmt.Errorf("offsetSec %d outside -3599..3599", *s.OffsetSec)
	}
	if s.WakeAt != nil && s.Mode != string(wake.Sleep) {
		return errors.New("wakeAt is for mode sleep only")
	}
	return nil
}

func checkHold(a any) error { return nonEmpty("hold", a.(*HoldArgs).Hold) }

func checkTime(a any) error {
	if a.(*TimeArgs).Floor.IsZero() {
		return errors.New("floor must be a time (RFC 3339)")
	}
	return nil
}

func checkConfigGet(a any) error {
	c := a.(*ConfigArgs)
	if c.Value != nil {
		return errors.New("config-get takes no value")
	}
	return nonEmpty("key", c.Key)
}

func checkConfigSet(a any) error {
	c := a.(*ConfigArgs)
	if c.Value == nil {
		return errors.New("config-set needs a value")
	}
	return nonEmpty("key", c.Key)
}

func nonEmpty(name, v string) error {
	if v == "" {
		return fmt.Errorf("%s must not be empty", name)
	}
	return nil
}

// inRange refuses v outside lo..hi, naming the argument and the range.
func inRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d outside %d..%d", name, v, lo, hi)
	}
	return nil
}

func nonNegative(name string, v int64) error {
	if v < 0 {
		return fmt.Errorf("%s must not be negative", name)
	}
	return nil
}

// DecodeArgs decodes and checks the arguments of op from their JSON. It
// returns nil for an operation without arguments (raw must then be absent,
// null or {}), and an error for an unknown op, unknown members or invalid
// values.
func DecodeArgs(op string, raw json.RawMessage) (any, error) {
	spec, ok := opArgs[op]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", truncate(op))
	}
	empty := len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
	if spec.new == nil {
		if !empty && string(bytes.Join(bytes.Fields(raw), nil)) != "{}" {
			return nil, fmt.Errorf("%s takes no arguments", op)
		}
		return nil, nil
	}
	a := spec.new()
	if !empty {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(a); err != nil {
			return nil, fmt.Errorf("%s arguments: %v", op, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%s arguments: trailing data", op)
		}
		if err := canon.NoDuplicates(raw); err != nil {
			return nil, fmt.Errorf("%s arguments: %v", op, err)
		}
	}
	if spec.check != nil {
		if err := spec.check(a); err != nil {
			return nil, fmt.Errorf("%s arguments: %v", op, err)
		}
	}
	return a, nil
}

// Payload is the payload member of a command object.
type Payload struct {
	// Device is the DID of the device the command is for, so a command
	// cannot be redirected to another device by whoever controls the
	// broker.
	Device string `json:"device"`
	// Seq is the operator's sequence number (see NextSeq).
	Seq uint64 `json:"seq"`
	Op  string `json:"op"`
	// Args are the operation's arguments; absent when it has none.
	Args json.RawMessage `json:"args,omitempty"`
}

// Spec describes a command for an operator to sign.
type Spec struct {
	// Device is the DID of the device the command is for.
	Device did.DID
	// Seq must exceed every sequence number this operator used before
	// with this device (NextSeq picks one).
	Seq uint64
	Op  string
	// Args are the operation's arguments (the matching *Args type, or
	// nil).
	Args any
	// IssuedAt is the issuance time; it must be set.
	IssuedAt time.Time
	// TTL is the command's lifetime; zero means DefaultTTL. The MQTT
	// message expires with it.
	TTL time.Duration
	// Rand is the source of the command id; nil means crypto/rand.
	Rand io.Reader
}

// Lifetimes of a command.
const (
	// DefaultTTL is a command's lifetime when Spec.TTL is zero: long
	// enough to reach a device that wakes hourly or daily.
	DefaultTTL = 24 * time.Hour
	// DefaultMaxTTL is the longest lifetime a device accepts when its
	// configuration does not say (Config.MaxCommandTTL in runtime/manage),
	// and the lifetime of a command that declares none.
	DefaultMaxTTL = 30 * 24 * time.Hour
)

// Sign builds the command spec describes as a Governed Object with purpose
// torpor:command issued by key. It checks the arguments as the device
// will.
func Sign(key *did.PrivateKey, spec Spec) (*governed.Object, error) {
	if spec.Device.IsZero() {
		return nil, errors.New("command: command without a device DID")
	}
	if spec.Seq == 0 {
		return nil, errors.New("command: command sequence numbers start at 1")
	}
	var raw json.RawMessage
	if spec.Args != nil {
		b, err := json.Marshal(spec.Args)
		if err != nil {
			return nil, fmt.Errorf("command: encoding %s arguments: %v", spec.Op, err)
		}
		raw = b
	}
	if _, err := DecodeArgs(spec.Op, raw); err != nil {
		return nil, fmt.Errorf("command: %v", err)
	}
	ttl := spec.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return governed.Sign(key, governed.Template{
		IssuedAt: spec.IssuedAt,
		Semantic: governed.Semantic{Schema: Schema},
		Payload:  Payload{Device: spec.Device.String(), Seq: spec.Seq, Op: spec.Op, Args: raw},
		Purpose:  Purpose,
		TTL:      ttl.Truncate(time.Second),
		Rand:     spec.Rand,
	})
}

// NextSeq returns the sequence number an operator uses next: the command's
// issuance time in Unix milliseconds, or last+1 if that is not greater.
// Time-based numbers need no shared counter, so several operator machines
// holding the same key (or one that lost its state file) still issue
// increasing numbers as long as their clocks are roughly right; last keeps
// them strictly increasing on one machine even when its clock steps back.
func NextSeq(last uint64, now time.Time) uint64 {
	ms := now.UnixMilli()
	if ms < 0 || uint64(ms) <= last {
		return last + 1
	}
	return uint64(ms)
}

// MaxIDLen bounds a command id, so the device's ledger key for it stays
// small.
const MaxIDLen = 256

// ParsePayload decodes and checks a command object's payload: its schema,
// the length of its id, no duplicate or unknown members, a sequence number
// of at least 1 and the arguments of its op (DecodeArgs). It returns the
// payload and the decoded arguments. It does not verify the object; the
// device's admission does that first.
func ParsePayload(o *governed.Object) (Payload, any, error) {
	var p Payload
	if o.Semantic.Schema != Schema {
		return p, nil, fmt.Errorf("schema %q is not %s", truncate(o.Semantic.Schema), Schema)
	}
	if len(o.ID) > MaxIDLen {
		return p, nil, fmt.Errorf("id of %d bytes exceeds %d", len(o.ID), MaxIDLen)
	}
	if err := canon.NoDuplicates(o.Payload); err != nil {
		return p, nil, fmt.Errorf("payload: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(o.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, nil, fmt.Errorf("payload: %v", err)
	}
	if p.Seq == 0 {
		return p, nil, errors.New("payload: seq must be at least 1")
	}
	args, err := DecodeArgs(p.Op, p.Args)
	return p, args, err
}

// truncate shortens what a peer sent for a message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
