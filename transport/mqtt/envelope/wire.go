package envelope

import (
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/transport/mqtt/cborjson"
)

// Content types of command, reply, status and event payloads (the MQTT 5
// Content Type property, MQTT 5.0 Section 3.3.2.3.9).
const (
	ContentTypeJSON = "application/json"
	ContentTypeCBOR = "application/cbor"
)

// MaxPayload bounds every payload a Client or an operator (VerifyObject)
// decodes.
const MaxPayload = 64 << 10

// errUnsupportedContentType is returned (wrapped) by DecodePayload.
var errUnsupportedContentType = errors.New("unsupported content type")

// IsCBOR reports whether the MQTT content type ct selects CBOR. An absent
// content type means JSON; so does application/json with or without
// parameters. Anything else is an error wrapping errUnsupportedContentType.
func IsCBOR(ct string) (bool, error) {
	if ct == "" {
		return false, nil
	}
	mt, err := mediaType(ct)
	switch {
	case err != nil:
		return false, fmt.Errorf("%w %q", errUnsupportedContentType, truncate(ct))
	case mt == ContentTypeJSON:
		return false, nil
	case mt == ContentTypeCBOR:
		return true, nil
	}
	return false, fmt.Errorf("%w %q (want %s or %s)", errUnsupportedContentType, truncate(ct), ContentTypeJSON, ContentTypeCBOR)
}

// DecodePayload returns the JSON text of a payload of content type ct.
// JSON is returned as it is (the Governed Object parser checks it); CBOR is
// converted to JSON (cborjson.ToJSON).
func DecodePayload(ct string, b []byte) ([]byte, error) {
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("payload of %d bytes exceeds %d", len(b), MaxPayload)
	}
	c, err := IsCBOR(ct)
	if err != nil || !c {
		return b, err
	}
	return cborjson.ToJSON(b)
}

// EncodePayload returns the JSON text j in the encoding cbor selects.
func EncodePayload(j []byte, asCBOR bool) ([]byte, error) {
	if !asCBOR {
		return j, nil
	}
	return cborjson.ToCBOR(j)
}

// ContentType is the MQTT content type of a payload encoded as asCBOR
// selects.
func ContentType(asCBOR bool) string {
	if asCBOR {
		return ContentTypeCBOR
	}
	return ContentTypeJSON
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Encode returns the payload and MQTT content type that carry the JSON
// object j, as CBOR when asCBOR is set.
func Encode(j []byte, asCBOR bool) (payload []byte, ct string, err error) {
	payload, err = EncodePayload(j, asCBOR)
	return payload, ContentType(asCBOR), err
}
