package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
)

// ReasonUnsupportedContentType rejects a message whose MQTT content type
// is neither JSON nor CBOR. The other rejection reasons are the
// receiver-check reasons of package governed and those of
// transport/mqtt/command.
const ReasonUnsupportedContentType = "unsupported-content-type"

// Purposes and schemas of the Governed Objects a device publishes.
const (
	PurposeReply  = "torpor:command-reply"
	PurposeStatus = "torpor:status"
	PurposeEvent  = "torpor:event"

	SchemaReply  = "https://torpor.dev/schemas/mqtt/reply/v1"
	SchemaStatus = "https://torpor.dev/schemas/mqtt/status/v1"
	SchemaEvent  = "https://torpor.dev/schemas/mqtt/event/v1"
)

// DefaultReplyTTL is the lifetime of replies, statuses and events.
const DefaultReplyTTL = 7 * 24 * time.Hour

// SignReply signs reply as the reply object to a command, issued at now.
func SignReply(key *did.PrivateKey, now time.Time, reply any) (*governed.Object, error) {
	return signDeviceObject(key, now, SchemaReply, PurposeReply, reply, DefaultReplyTTL)
}

func signDeviceObject(key *did.PrivateKey, now time.Time, schema, purpose string, payload any, ttl time.Duration) (*governed.Object, error) {
	return governed.Sign(key, governed.Template{
		IssuedAt: now,
		Semantic: governed.Semantic{Schema: schema},
		Payload:  payload,
		Purpose:  purpose,
		TTL:      ttl,
	})
}

// ErrExpired is returned (wrapped) by the Verify functions for an object
// whose lifetime has ended: a retained status that old says nothing about
// the device now. An issue time ahead of the verifier's clock is not
// refused: a device's clock may run ahead (time-scaled demonstrations), and
// its lifetime then ends later, never earlier.
var ErrExpired = errors.New("mqtt: object expired")

// ErrNotFromDevice is returned (wrapped) by the Verify functions when an
// object, status or event was not signed by the device the caller expected,
// or is not one.
var ErrNotFromDevice = errors.New("mqtt: not a valid object from the device")

// VerifyObject decodes and checks an object a device published, as an
// operator received it at now: its signature verifies (RFC 8032 Ed25519
// over the RFC 8785 canonical form, package governed), it has schema and
// purpose, it has not expired at now (ErrExpired), and, unless device is the zero DID, the
// device signed it. It decodes the payload into dst and returns the
// object.
func VerifyObject(contentType string, payload []byte, device did.DID, schema, purpose string, dst any, now time.Time) (*governed.Object, error) {
	return verifyDeviceObject(contentType, payload, device, schema, purpose, dst, now)
}

// checkTimes refuses an object expired at now.
func checkTimes(o *governed.Object, now time.Time) error {
	if exp, ok := o.Expiry(); ok && now.After(exp) {
		return fmt.Errorf("%w: issued at %s by %s, expired at %s", ErrExpired,
			o.IssuedAt.UTC().Format(time.RFC3339), o.Issuer, exp.UTC().Format(time.RFC3339))
	}
	return nil
}

func verifyDeviceObject(contentType string, payload []byte, device did.DID, schema, purpose string, dst any, now time.Time) (*governed.Object, error) {
	j, err := DecodePayload(contentType, payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	o, err := governed.Parse(j)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	if err := o.VerifySignature(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	if err := checkTimes(o, now); err != nil {
		return nil, err
	}
	if !device.IsZero() && o.Issuer != device {
		return nil, fmt.Errorf("%w: signed by %s, want %s", ErrNotFromDevice, o.Issuer, device)
	}
	if o.Governance.Purpose != purpose || o.Semantic.Schema != schema {
		return nil, fmt.Errorf("%w: purpose %q schema %q, want %q %q", ErrNotFromDevice,
			truncate(o.Governance.Purpose), truncate(o.Semantic.Schema), purpose, schema)
	}
	if err := json.Unmarshal(o.Payload, dst); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrNotFromDevice, err)
	}
	return o, nil
}
