package canon

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// Member is one member of a JSON object: its name, decoded, and its value
// exactly as it appeared in the input.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members splits the JSON object b into its members, in input order, keeping
// each value's bytes as received (a copy). It fails for anything but one
// strict JSON object (internal/strictjson; surrounding white space allowed):
// a duplicate member name at any depth among what it refuses.
// encoding/json keeps the last of two equal names silently, and two
// readers that keep different ones would read different messages from the
// same bytes.
func Members(b []byte) ([]Member, error) {
	ms, err := strictjson.Members(b, nil)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{Name: string(m.Name), Value: bytes.Clone(m.Value)}
	}
	return out, nil
}

// MemberMap is Members as a map from name to value.
func MemberMap(b []byte) (map[string]json.RawMessage, error) {
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(ms))
	for _, x := range ms {
		m[x.Name] = x.Value
	}
	return m, nil
}

// MemberView is MemberMap whose values are slices of b, not copies: for a
// caller that reads them before b changes, or keeps nothing of them.
func MemberView(b []byte) (map[string]json.RawMessage, error) {
	var buf [16]strictjson.Member
	ms, err := strictjson.Members(b, buf[:0])
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	m := make(map[string]json.RawMessage, len(ms))
	for _, x := range ms {
		m[string(x.Name)] = x.Value
	}
	return m, nil
}

// Object returns nil if b is one strict JSON object (what Members accepts),
// and Members' error otherwise, without copying anything.
func Object(b []byte) error {
	var buf [16]strictjson.Member
	if _, err := strictjson.Members(b, buf[:0]); err != nil {
		return fmt.Errorf("canon: %w", err)
	}
	return nil
}
