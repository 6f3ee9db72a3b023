package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A2A protocol versions and the header that selects one (draft Section
// 7.8: a request without the header is v0.3).
const (
	Version10     = "1.0"
	Version03     = "0.3"
	VersionHeader = "A2A-Version"
	// ExtensionsHeader lists the extensions a client uses; informational.
	ExtensionsHeader = "A2A-Extensions"
)

// Message roles. A2A v1.0 ProtoJSON spells the enum names; v0.3 uses the
// lower-case words.
const (
	RoleUser    = "ROLE_USER"
	RoleAgent   = "ROLE_AGENT"
	RoleUser03  = "user"
	RoleAgent03 = "agent"
)

// Message is an A2A message in either the v1.0 shape (role "ROLE_USER")
// or the v0.3 shape (kind "message", role "user"). Empty members are
// omitted on output, as the reference does.
type Message struct {
	// Kind is "message" in v0.3 and empty in v1.0.
	Kind      string `json:"kind,omitempty"`
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
	ContextID string `json:"contextId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	// Extensions lists extension URIs the message depends on. A sender
	// SHOULD list ExtDataObject when a Governed Object part is present and
	// MUST NOT when only MLS parts are (draft Section 7.2); a receiver
	// never requires it.
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
}

// ErrInvalidMessage is returned (wrapped) by Message.Validate.
var ErrInvalidMessage = errors.New("a2a: invalid message")

// Validate checks what both versions require: a messageId, a known role
// for the shape (ROLE_USER/ROLE_AGENT, or user/agent with kind "message")
// and at least one part.
func (m *Message) Validate() error {
	switch {
	case m.MessageID == "":
		return fmt.Errorf("%w: no messageId", ErrInvalidMessage)
	case len(m.Parts) == 0:
		return fmt.Errorf("%w: no parts", ErrInvalidMessage)
	}
	switch m.Role {
	case RoleUser, RoleAgent:
		if m.Kind != "" && m.Kind != "message" {
			return fmt.Errorf("%w: kind %q", ErrInvalidMessage, m.Kind)
		}
	case RoleUser03, RoleAgent03:
		if m.Kind != "message" {
			return fmt.Errorf("%w: v0.3 message without kind \"message\"", ErrInvalidMessage)
		}
	default:
		return fmt.Errorf("%w: role %q", ErrInvalidMessage, m.Role)
	}
	return nil
}

// IsUser reports whether the message comes from the user (the calling
// agent) in either spelling.
func (m Message) IsUser() bool { return m.Role == RoleUser || m.Role == RoleUser03 }

// ForVersion returns a copy of m in the shape of A2A version v ("1.0" or
// "0.3"): role spelling, kind, and the shape of every part.
func (m Message) ForVersion(v string) Message {
	user := m.IsUser()
	parts := make([]Part, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = p.ForVersion(v)
	}
	m.Parts = parts
	if v == Version03 {
		m.Kind = "message"
		m.Role = RoleAgent03
		if user {
			m.Role = RoleUser03
		}
		return m
	}
	m.Kind = ""
	m.Role = RoleAgent
	if user {
		m.Role = RoleUser
	}
	return m
}

// HasExtension reports whether uri is listed in the message's extensions.
func (m Message) HasExtension(uri string) bool {
	for _, e := range m.Extensions {
		if e == uri {
			return true
		}
	}
	return false
}

// NewUserMessage returns a v1.0 user message with the given parts. It
// lists ExtDataObject in extensions exactly when a part carries a Governed
// Object (draft Section 7.2).
func NewUserMessage(messageID, contextID string, parts ...Part) Message {
	m := Message{MessageID: messageID, Role: RoleUser, ContextID: contextID, Parts: parts}
	for _, p := range parts {
		if mt, _, err := MediaTypeOf(p); err == nil && mt == MediaTypeDataObject {
			m.Extensions = []string{ExtDataObject}
			break
		}
	}
	return m
}

// ContextPeer returns the DID in a "mls:<did>" context id, as the reference
// addresses pair sessions, and whether it was one ("mls:room:<id>" is not).
func ContextPeer(contextID string) (string, bool) {
	rest, ok := strings.CutPrefix(contextID, "mls:")
	if !ok || strings.HasPrefix(rest, "room:") || rest == "" {
		return "", false
	}
	return rest, true
}
