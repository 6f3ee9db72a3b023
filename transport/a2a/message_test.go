package a2a

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtensionExampleMessages(t *testing.T) {
	tests := []struct {
		file      string
		mediaType string
		goExt     bool
	}{
		{"valid-comms-message.json", MediaTypeDataObject, true},
		{"mls-only-message-no-go-extension.json", MediaTypeMLSWire, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(vectorDir, "extension-examples/data-object-v1/examples", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var m Message
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			if !m.IsUser() || m.HasExtension(ExtDataObject) != tt.goExt {
				t.Errorf("role %q, GO extension %v; want user, %v", m.Role, m.HasExtension(ExtDataObject), tt.goExt)
			}
			if _, err := ReadPart(m.Parts[0], tt.mediaType); err != nil {
				t.Errorf("part 0: %v", err)
			}
			// Building the same parts ourselves stamps the extension the same way.
			if got := NewUserMessage("x", "", m.Parts...).HasExtension(ExtDataObject); got != tt.goExt {
				t.Errorf("NewUserMessage stamps GO extension = %v, want %v", got, tt.goExt)
			}
		})
	}
}

func TestMessageVersions(t *testing.T) {
	p, err := MLSWire{Wire: []byte{1}}.Part()
	if err != nil {
		t.Fatal(err)
	}
	m := NewUserMessage("m1", "mls:did:key:z6Mk", p)
	m03 := m.ForVersion(Version03)
	b, err := json.Marshal(m03)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"message","messageId":"m1","role":"user","contextId":"mls:did:key:z6Mk","parts":[{"kind":"data","data":{"mediaType":"` + MediaTypeMLSWire + `","wire":"AQ=="}}]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("v0.3 message (-want +got):\n%s", diff)
	}
	if err := m03.Validate(); err != nil {
		t.Errorf("v0.3 message invalid: %v", err)
	}
	back := m03.ForVersion(Version10)
	b, _ = json.Marshal(back)
	want = `{"messageId":"m1","role":"ROLE_USER","contextId":"mls:did:key:z6Mk","parts":[{"data":{"mediaType":"` + MediaTypeMLSWire + `","wire":"AQ=="}}]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("v1.0 message (-want +got):\n%s", diff)
	}
	// The part-level media type is gone after a v0.3 trip; reading falls
	// back to data.mediaType.
	if _, err := ReadMLSWire(back.Parts[0]); err != nil {
		t.Errorf("reading after v0.3 trip: %v", err)
	}
}

func TestMessageValidate(t *testing.T) {
	part := []Part{{Data: json.RawMessage(`{}`)}}
	tests := []struct {
		name string
		m    Message
		ok   bool
	}{
		{"v1.0 user", Message{MessageID: "1", Role: RoleUser, Parts: part}, true},
		{"v1.0 agent", Message{MessageID: "1", Role: RoleAgent, Parts: part}, true},
		{"v0.3 user", Message{Kind: "message", MessageID: "1", Role: RoleUser03, Parts: part}, true},
		{"v0.3 without kind", Message{MessageID: "1", Role: RoleUser03, Parts: part}, false},
		{"no id", Message{Role: RoleUser, Parts: part}, false},
		{"no parts", Message{MessageID: "1", Role: RoleUser}, false},
		{"bad role", Message{MessageID: "1", Role: "ROLE_ROBOT", Parts: part}, false},
		{"bad kind", Message{Kind: "task", MessageID: "1", Role: RoleUser, Parts: part}, false},
	}
	for _, tt := range tests {
		err := tt.m.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidMessage)) {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestContextPeer(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"mls:did:key:z6Mkabc", "did:key:z6Mkabc", true},
		{"mls:room:lobby", "", false},
		{"mls:", "", false},
		{"ctx-1", "", false},
	}
	for _, tt := range tests {
		if got, ok := ContextPeer(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("ContextPeer(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
