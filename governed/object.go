package governed

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

// Version is the only format version (draft Section 5.1).
const Version = 1

// Algorithm is the only signatureAlgorithm (draft Section 5.1).
const Algorithm = "ed25519"

// signedMembers are the members the signature covers, in the order Sign
// writes them (draft Section 5.3).
var signedMembers = []string{"version", "id", "issuerDid", "issuedAt", "semantic", "payload", "governance"}

// sortedSigned are signedMembers in the order of their canonical form
// (RFC 8785, Section 3.2.3; for ASCII names the order of their bytes):
// canonicalSigned writes them so, and the canonicalisation need not sort
// the object's top level.
var sortedSigned = slices.Sorted(slices.Values(signedMembers))

// allMembers are the members a Governed Object has, and the only ones.
var allMembers = map[string]bool{
	"version": true, "id": true, "issuerDid": true, "issuedAt": true, "semantic": true,
	"payload": true, "governance": true, "signatureAlgorithm": true, "signature": true,
}

// Object is a parsed Governed Object. Its fields are decoded views of the
// members; the raw JSON of each member is kept as received and is what the
// signature is checked over and what MarshalJSON writes. Parse has
// validated its structure; only Receiver.Accept (or VerifySignature)
// establishes that it is authentic.
type Object struct {
	ID         string
	Issuer     did.DID
	IssuedAt   time.Time
	Semantic   Semantic
	Payload    json.RawMessage // a JSON object, as received
	Governance Governance
	Signature  []byte // 64 bytes

	members []canon.Member // as received, in received order
	signed  []byte         // canonical form of the signed members
}

// Semantic is the type descriptor of the payload.
type Semantic struct {
	// Schema is an absolute URI naming the payload type.
	Schema string
	// Version and EmbeddingHint are optional and of any JSON type; nil
	// when absent.
	Version       json.RawMessage
	EmbeddingHint json.RawMessage
}

// Governance holds the use constraints (draft Section 5.2).
type Governance struct {
	// Purpose is the declared use, such as "comms:message".
	Purpose string
	// TTLSeconds is the lifetime from issuedAt; nil when absent.
	TTLSeconds *float64
	// ExpiresAt is the absolute expiry; the zero time when absent.
	ExpiresAt time.Time
}

// Expiry returns the effective expiry the object declares: the earlier of
// issuedAt+ttlSeconds and expiresAt (draft Section 5.2). ok is false when
// it declares neither. A ttlSeconds too large for time.Duration saturates.
func (o *Object) Expiry() (t time.Time, ok bool) {
	g := o.Governance
	if g.TTLSeconds != nil {
		t, ok = o.IssuedAt.Add(secondsDuration(*g.TTLSeconds)), true
	}
	if !g.ExpiresAt.IsZero() && (!ok || g.ExpiresAt.Before(t)) {
		t, ok = g.ExpiresAt, true
	}
	return t, ok
}

func secondsDuration(s float64) time.Duration {
	ns := s * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	// Round up, so that a fractional nanosecond never makes an object
	// expire earlier than its issuer meant; sub-nanosecond TTLs matter to
	// nobody.
	return time.Duration(math.Ceil(ns))
}

// SignedBytes returns the canonical form the signature covers.
func (o *Object) SignedBytes() []byte { return bytes.Clone(o.signed) }

// MarshalJSON returns the object with every member exactly as received, in
// the order received, without white space between members.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o.members {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.Name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Parse decodes a Governed Object and validates its structure (check 1 of
// draft Section 8.1; see the package documentation for the rules). It
// returns a *RejectError with ReasonMalformed on failure. It does not check
// the signature.
func Parse(b []byte) (*Object, error) {
	ms, err := canon.Members(b)
	if err != nil {
		return nil, reject(ReasonMalformed, "%v", err)
	}
	raw := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if !allMembers[m.Name] {
			return nil, reject(ReasonMalformed, "unknown member %q", truncate(m.Name))
		}
		raw[m.Name] = m.Value
	}
	for name := range allMembers {
		if raw[name] == nil {
			return nil, reject(ReasonMalformed, "missing member %q", name)
		}
	}
	o := &Object{members: ms}
	if o.signed, err = canonicalSigned(raw); err != nil {
		return nil, err
	}
	for _, step := range []func(map[string]json.RawMessage) error{
		o.parseHeader, o.parseSemantic, o.parsePayload, o.parseGovernance, o.parseSignature,
	} {
		if err := step(raw); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// canonicalSigned returns the canonical form of the signed members, built
// from their raw JSON: each member's canonical value after its name, in
// sortedSigned's order, which is the canonical order (the names need no
// escape).
func canonicalSigned(raw map[string]json.RawMessage) ([]byte, error) {
	n := 2
	for _, name := range sortedSigned {
		n += len(name) + 4 + len(raw[name])
	}
	c := make([]byte, 0, n)
	c = append(c, '{')
	for i, name := range sortedSigned {
		if i > 0 {
			c = append(c, ',')
		}
		c = append(append(append(c, '"'), name...), `":`...)
		var err error
		if c, err = canon.Append(c, raw[name]); err != nil {
			return nil, reject(ReasonMalformed, "signed members are not I-JSON: %v", err)
		}
	}
	return append(c, '}'), nil
}

func (o *Object) parseHeader(raw map[string]json.RawMessage) error {
	if v, err := strconv.ParseFloat(string(raw["version"]), 64); err != nil || v != Version {
		return reject(ReasonMalformed, "version is %s, want %d", truncate(string(raw["version"])), Version)
	}
	if !str(raw["id"], &o.ID) || o.ID == "" {
		return reject(ReasonMalformed, "id is not a non-empty string")
	}
	if i := controlAt(o.ID); i >= 0 {
		return reject(ReasonMalformed, "id has a control character at byte %d", i)
	}
	var s string
	if !str(raw["issuerDid"], &s) {
		return reject(ReasonMalformed, "issuerDid is not a string")
	}
	var err error
	if o.Issuer, err = did.Parse(s); err != nil {
		return reject(ReasonMalformed, "issuerDid: %v", err)
	}
	if o.IssuedAt, err = timeMember(raw["issuedAt"]); err != nil {
		return reject(ReasonMalformed, "issuedAt: %v", err)
	}
	return nil
}

func (o *Object) parseSemantic(raw map[string]json.RawMessage) error {
	sem, err := canon.MemberMap(raw["semantic"])
	if err != nil {
		return reject(ReasonMalformed, "semantic is not an object")
	}
	if !str(sem["schema"], &o.Semantic.Schema) {
		return reject(ReasonMalformed, "semantic.schema is not a string")
	}
	if u, err := url.Parse(o.Semantic.Schema); err != nil || !u.IsAbs() {
		return reject(ReasonMalformed, "semantic.schema is not an absolute URI")
	}
	o.Semantic.Version = sem["version"]
	o.Semantic.EmbeddingHint = sem["embeddingHint"]
	return nil
}

func (o *Object) parsePayload(raw map[string]json.RawMessage) error {
	if err := canon.Object(raw["payload"]); err != nil {
		return reject(ReasonMalformed, "payload is not an object")
	}
	o.Payload = raw["payload"]
	return nil
}

func (o *Object) parseGovernance(raw map[string]json.RawMessage) error {
	gov, err := canon.MemberMap(raw["governance"])
	if err != nil {
		return reject(ReasonMalformed, "governance is not an object")
	}
	for name := range gov {
		if name != "purpose" && name != "ttlSeconds" && name != "expiresAt" {
			return reject(ReasonMalformed, "unknown governance member %q", truncate(name))
		}
	}
	g := &o.Governance
	if !str(gov["purpose"], &g.Purpose) || g.Purpose == "" {
		return reject(ReasonMalformed, "governance.purpose is not a non-empty string")
	}
	if i := controlAt(g.Purpose); i >= 0 {
		return reject(ReasonMalformed, "governance.purpose has a control character at byte %d", i)
	}
	if t, ok := gov["ttlSeconds"]; ok {
		v, err := strconv.ParseFloat(string(t), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return reject(ReasonMalformed, "governance.ttlSeconds is not a number >= 0")
		}
		g.TTLSeconds = &v
	}
	if e, ok := gov["expiresAt"]; ok {
		if g.ExpiresAt, err = timeMember(e); err != nil {
			return reject(ReasonMalformed, "governance.expiresAt: %v", err)
		}
	}
	return nil
}

func (o *Object) parseSignature(raw map[string]json.RawMessage) error {
	var alg, sig string
	if !str(raw["signatureAlgorithm"], &alg) || alg != Algorithm {
		return reject(ReasonMalformed, "signatureAlgorithm is not %q", Algorithm)
	}
	if !str(raw["signature"], &sig) {
		return reject(ReasonMalformed, "signature is not a string")
	}
	b, err := decodeSignature(sig)
	if err != nil || len(b) != ed25519.SignatureSize {
		return reject(ReasonMalformed, "signature is not base64 of %d bytes", ed25519.SignatureSize)
	}
	o.Signature = b
	return nil
}

// decodeSignature decodes standard base64, padded (draft Section 5.4) or
// not. URL-safe characters and white space are refused.
func decodeSignature(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

// str decodes a JSON string member; it reports false for any other type.
// controlAt returns the byte offset of the first control character (C0,
// DEL or C1) in s, or -1. An id or purpose names things in logs, file
// names and handler arguments (an exec handler's argv cannot carry a NUL),
// so one with a control character is refused when the object is parsed
// rather than accepted and then lost at hand-off.
func controlAt(s string) int {
	for i, r := range s {
		if unicode.IsControl(r) {
			return i
		}
	}
	return -1
}

func str(raw json.RawMessage, dst *string) bool {
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, dst) == nil
}

// timeMember decodes an RFC 3339 date-time string.
func timeMember(raw json.RawMessage) (time.Time, error) {
	var s string
	if !str(raw, &s) {
		return time.Time{}, errNotString
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errNotRFC3339
	}
	return t, nil
}

type parseErr string

func (e parseErr) Error() string { return string(e) }

const (
	errNotString  parseErr = "not a string"
	errNotRFC3339 parseErr = "not an RFC 3339 date-time"
)

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
