package governed

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

// Template describes an object to sign.
type Template struct {
	// ID is the object id; empty means a fresh UUIDv7 (RFC 9562 Section
	// 5.7) from IssuedAt and Rand, unique per issuer as Section 5.1 asks.
	ID string
	// IssuedAt is the issuance time; it must be set. It is written in UTC
	// with millisecond precision, as JavaScript's toISOString writes it.
	IssuedAt time.Time
	Semantic Semantic
	// Payload is marshalled with encoding/json and must encode to a JSON
	// object. Prefer strings or integers to floating-point numbers (draft
	// Section 5.3).
	Payload any
	// Purpose is the declared use; it must be non-empty.
	Purpose string
	// TTL is written as ttlSeconds when non-zero; it must be whole seconds.
	TTL time.Duration
	// ExpiresAt is written as expiresAt when non-zero.
	ExpiresAt time.Time
	// Rand is the source of a generated ID; nil means crypto/rand.
	Rand io.Reader
}

// Sign builds the object t describes, issued by key, and signs it (draft
// Section 5.4). Every member is written in its canonical form, so the
// object's bytes are the bytes any verifier canonicalises to. The result
// has passed Parse.
func Sign(key *did.PrivateKey, t Template) (*Object, error) {
	members, err := t.members(key.DID())
	if err != nil {
		return nil, err
	}
	raw := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		raw[m.Name] = m.Value
	}
	signed, err := canonicalSigned(raw)
	if err != nil {
		return nil, fmt.Errorf("governed: signing: %v", err)
	}
	sig := base64.StdEncoding.EncodeToString(key.Sign(signed))
	members = append(members,
		canon.Member{Name: "signatureAlgorithm", Value: json.RawMessage(`"` + Algorithm + `"`)},
		canon.Member{Name: "signature", Value: json.RawMessage(`"` + sig + `"`)})
	o := &Object{members: members}
	b, _ := o.MarshalJSON()
	o, err = Parse(b)
	if err != nil {
		return nil, fmt.Errorf("governed: signing: the template makes an invalid object: %v", err)
	}
	return o, nil
}

func (t Template) members(issuer did.DID) ([]canon.Member, error) {
	if t.IssuedAt.IsZero() {
		return nil, errors.New("governed: template without IssuedAt")
	}
	if t.TTL < 0 || t.TTL%time.Second != 0 {
		return nil, fmt.Errorf("governed: TTL %v is not a whole number of seconds >= 0", t.TTL)
	}
	id := t.ID
	if id == "" {
		var err error
		if id, err = newUUIDv7(t.IssuedAt, t.Rand); err != nil {
			return nil, err
		}
	}
	gov := map[string]any{"purpose": t.Purpose}
	if t.TTL > 0 {
		gov["ttlSeconds"] = int64(t.TTL / time.Second)
	}
	if !t.ExpiresAt.IsZero() {
		gov["expiresAt"] = formatTime(t.ExpiresAt)
	}
	sem := map[string]any{"schema": t.Semantic.Schema}
	if t.Semantic.Version != nil {
		sem["version"] = t.Semantic.Version
	}
	if t.Semantic.EmbeddingHint != nil {
		sem["embeddingHint"] = t.Semantic.EmbeddingHint
	}
	values := []any{Version, id, issuer.String(), formatTime(t.IssuedAt), sem, t.Payload, gov}
	members := make([]canon.Member, len(signedMembers))
	for i, v := range values {
		b, err := canon.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("governed: %s: %v", signedMembers[i], err)
		}
		members[i] = canon.Member{Name: signedMembers[i], Value: b}
	}
	if !bytes.HasPrefix(members[5].Value, []byte("{")) {
		return nil, errors.New("governed: payload must encode to a JSON object")
	}
	return members, nil
}

// formatTime writes t as JavaScript's Date.toISOString does.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// newUUIDv7 returns a UUIDv7: 48 bits of Unix milliseconds, version 7,
// 74 random bits and the RFC 9562 variant.
func newUUIDv7(t time.Time, r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var u [16]byte
	if _, err := io.ReadFull(r, u[6:]); err != nil {
		return "", fmt.Errorf("governed: generating id: %w", err)
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
