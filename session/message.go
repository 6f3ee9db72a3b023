package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/strictjson"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Application messages, draft-chapman-a2a-mls-03 Section 7.5: the
// plaintext is the UTF-8 encoding of a JSON object whose member "object"
// holds a Governed Object. The reference implementation also writes, and
// demands on reading, a member "mediaType" with
// application/vnd.atom.encrypted-data-object+json;version=1
// (docs/sessions.md, "Application messages"), so Plaintext emits it and
// ObjectOf accepts it, or its absence, as the draft allows.

// Plaintext returns the application plaintext carrying the Governed Object
// obj (a JSON object, not checked further here: receivers verify it).
func Plaintext(obj json.RawMessage) ([]byte, error) {
	if !isJSONObject(obj) {
		return nil, errors.New("session: the object must be a JSON object")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		MediaType string          `json:"mediaType"`
		Object    json.RawMessage `json:"object"`
	}{a2a.MediaTypeEncryptedDataObject, obj})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// ObjectOf returns the Governed Object in an application plaintext,
// compacted (insignificant white space removed; members, their order and
// escapes as received), so that ObjectOf(Plaintext(obj)) is obj. A
// mediaType member, when present, must be the reference's; other members
// are ignored (Section 7.5: receivers ignore members they do not know).
// Member names match exactly, not case-insensitively as encoding/json
// would. The plaintext is read by internal/strictjson, the module's one
// strict reader, so one with a member twice at any depth ("object" or
// "mediaType" among them) is refused: two parsers must not read two
// different objects from one plaintext.
func ObjectOf(plaintext []byte) (json.RawMessage, error) {
	members, err := strictjson.Members(plaintext, nil)
	if err != nil {
		return nil, fmt.Errorf("session: application plaintext is not a strict JSON object: %v", err)
	}
	var obj json.RawMessage
	for _, m := range members {
		switch string(m.Name) {
		case "mediaType":
			var mt string
			if err := json.Unmarshal(m.Value, &mt); err != nil || mt != a2a.MediaTypeEncryptedDataObject {
				return nil, fmt.Errorf("session: application plaintext of media type %s", m.Value)
			}
		case "object":
			obj = m.Value
		}
	}
	if !isJSONObject(obj) {
		return nil, errors.New("session: application plaintext has no member \"object\" holding a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, obj); err != nil {
		return nil, fmt.Errorf("session: application plaintext: %v", err)
	}
	return b.Bytes(), nil
}

func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && json.Valid(b)
}

// Encrypt encrypts data as an application message of the group (RFC 9420,
// Section 15) and stores the advanced ratchet in tx. Commit tx before
// sending the message: a state restored from before the encryption would
// encrypt the next message with the same key and nonce. It returns
// ErrNotDelivered for a pair session whose Welcome was not delivered.
func (s *Sessions) Encrypt(tx *bolt.Tx, group, data []byte) ([]byte, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	if st.meta.Pending {
		return nil, fmt.Errorf("%w: group %x", ErrNotDelivered, group)
	}
	m, err := st.g.EncryptApplication(data, nil)
	if err != nil {
		return nil, err
	}
	wire, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	return wire, s.save(tx, st)
}

// SealObject encrypts the Governed Object obj in the group and returns the
// MLS wire part (Section 7.5) naming this agent as its sender; see Encrypt.
func (s *Sessions) SealObject(tx *bolt.Tx, group []byte, obj json.RawMessage) (a2a.MLSWire, error) {
	pt, err := Plaintext(obj)
	if err != nil {
		return a2a.MLSWire{}, err
	}
	wire, err := s.Encrypt(tx, group, pt)
	if err != nil {
		return a2a.MLSWire{}, err
	}
	return a2a.MLSWire{Wire: wire, SenderDID: s.self}, nil
}
