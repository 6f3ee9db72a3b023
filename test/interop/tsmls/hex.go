package tsmls

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Hex is a byte string that travels as a lowercase hex JSON string, the
// peer's encoding for every byte value. JSON null decodes to nil.
type Hex []byte

// MarshalJSON implements json.Marshaler.
func (h Hex) MarshalJSON() ([]byte, error) {
	return json.Marshal(hex.EncodeToString(h))
}

// UnmarshalJSON implements json.Unmarshaler.
func (h *Hex) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*h = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("tsmls: hex value: %w", err)
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("tsmls: hex value: %w", err)
	}
	*h = v
	return nil
}

// String returns the lowercase hex form.
func (h Hex) String() string { return hex.EncodeToString(h) }
