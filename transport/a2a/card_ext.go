package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// ErrExtensionSchema is returned (in a *CardError) when an extension entry
// does not satisfy its JSON Schema.
var ErrExtensionSchema = errors.New("a2a: extension entry does not match its schema")

// ValidateOfflineDeliveryExtension checks raw, one capabilities.extensions
// entry, against the offline-delivery v1 agent-extension schema (the
// reference's spec/extensions/offline-delivery-v1/schemas/agent-extension.json):
// an object with exactly uri (the ExtOfflineDelivery constant), description
// (non-empty string), required (false) and params, where params is an object
// with exactly mode, one of "sleep" and "hourly_wake". It returns a
// *CardError wrapping ErrExtensionSchema that names the first violation.
func ValidateOfflineDeliveryExtension(raw []byte) error {
	m, err := schemaObject(raw, "uri", "description", "required", "params")
	if err != nil {
		return err
	}
	if err := schemaCommon(m, ExtOfflineDelivery); err != nil {
		return err
	}
	p, err := schemaObject(m["params"], "mode")
	if err != nil {
		return schemaErr("params: %v", errors.Unwrap(err))
	}
	var mode string
	if err := json.Unmarshal(p["mode"], &mode); err != nil {
		return schemaErr("params.mode is not a string")
	}
	if mode != OfflineModeSleep && mode != OfflineModeHourlyWake {
		return schemaErr("params.mode %q is not sleep or hourly_wake", mode)
	}
	return nil
}

// ValidateDataObjectExtension checks raw against the data-object v1
// agent-extension schema: exactly uri (ExtDataObject), description
// (non-empty) and required (false); params is forbidden.
func ValidateDataObjectExtension(raw []byte) error {
	m, err := schemaObject(raw, "uri", "description", "required")
	if err != nil {
		return err
	}
	return schemaCommon(m, ExtDataObject)
}

// schemaObject decodes raw as a JSON object whose members are exactly keys
// (additionalProperties false, every key required).
func schemaObject(raw []byte, keys ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, schemaErr("not a JSON object")
	}
	allowed := map[string]bool{}
	for _, k := range keys {
		allowed[k] = true
		if _, ok := m[k]; !ok {
			return nil, schemaErr("%s is required", k)
		}
	}
	for k := range m {
		if !allowed[k] {
			return nil, schemaErr("member %q is not allowed", k)
		}
	}
	return m, nil
}

func schemaCommon(m map[string]json.RawMessage, uri string) error {
	var u, desc string
	var req bool
	if json.Unmarshal(m["uri"], &u) != nil || u != uri {
		return schemaErr("uri is not %s", uri)
	}
	if json.Unmarshal(m["description"], &desc) != nil || desc == "" {
		return schemaErr("description must be a non-empty string")
	}
	if bytes.Equal(bytes.TrimSpace(m["required"]), []byte("null")) || json.Unmarshal(m["required"], &req) != nil || req {
		return schemaErr("required must be false")
	}
	return nil
}

func schemaErr(format string, args ...any) error {
	return &CardError{Reason: "schema", Err: fmt.Errorf("%w: %s", ErrExtensionSchema, fmt.Sprintf(format, args...))}
}

// OfflineMode returns the mode the card's offline-delivery extension
// declares, or "" when the card declares none.
func (c *Card) OfflineMode() string {
	e, ok := c.Extension(ExtOfflineDelivery)
	if !ok {
		return ""
	}
	var p struct {
		Mode string `json:"mode"`
	}
	json.Unmarshal(e.Params, &p)
	return p.Mode
}

// QueueBounds returns the bounds the card publishes in ExtQueueBounds, and
// whether it publishes any. Malformed params are an error.
func (c *Card) QueueBounds() (queuebounds.Bounds, bool, error) {
	e, ok := c.Extension(ExtQueueBounds)
	if !ok {
		return queuebounds.Bounds{}, false, nil
	}
	var b queuebounds.Bounds
	d := json.NewDecoder(bytes.NewReader(e.Params))
	d.DisallowUnknownFields()
	if err := d.Decode(&b); err != nil {
		return queuebounds.Bounds{}, true, &CardError{Reason: "schema", Err: fmt.Errorf("%w: queue bounds: %v", ErrExtensionSchema, err)}
	}
	return b, true, nil
}
