package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Member is one member of a JSON object: its name, decoded, and its value
// exactly as it appeared in the input.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members splits the JSON object b into its members, in input order, keeping
// each value's bytes as received. It fails for anything but one JSON object
// (surrounding white space allowed) and for a duplicate member name:
// encoding/json keeps the last of two equal names silently, and two readers
// that keep different ones would read different messages from the same
// bytes.
func Members(b []byte) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("canon: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("canon: not a JSON object")
	}
	var out []Member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("canon: %v", err)
		}
		name := tok.(string) // the decoder only yields strings as object keys
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("canon: member %q: %v", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("canon: duplicate member %q", name)
		}
		seen[name] = true
		out = append(out, Member{Name: name, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("canon: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canon: data after the JSON object")
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
