package mls

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// vectorCases returns the cases of mls/testdata/<name>, a JSON array of
// T; it fails the test if the file holds none.
func vectorCases[T any](t testing.TB, name string) []T {
	t.Helper()
	cases, err := vectorfmt.Load[T](filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return cases
}

// codec is a structure with both halves of the codec.
type codec interface {
	marshaler
	unmarshaler
}

// messageCodecs maps each field of messages.json to the structure it holds.
var messageCodecs = map[string]func() codec{
	"mls_welcome":                       func() codec { return new(MLSMessage) },
	"mls_group_info":                    func() codec { return new(MLSMessage) },
	"mls_key_package":                   func() codec { return new(MLSMessage) },
	"ratchet_tree":                      func() codec { return new(RatchetTree) },
	"group_secrets":                     func() codec { return new(GroupSecrets) },
	"add_proposal":                      func() codec { return &proposalBodyBox{t: ProposalTypeAdd} },
	"update_proposal":                   func() codec { return &proposalBodyBox{t: ProposalTypeUpdate} },
	"remove_proposal":                   func() codec { return &proposalBodyBox{t: ProposalTypeRemove} },
	"pre_shared_key_proposal":           func() codec { return &proposalBodyBox{t: ProposalTypePSK} },
	"re_init_proposal":                  func() codec { return &proposalBodyBox{t: ProposalTypeReInit} },
	"external_init_proposal":            func() codec { return &proposalBodyBox{t: ProposalTypeExternalInit} },
	"group_context_extensions_proposal": func() codec { return &proposalBodyBox{t: ProposalTypeGroupContextExtensions} },
	"commit":                            func() codec { return new(Commit) },
	"public_message_application":        func() codec { return new(MLSMessage) },
	"public_message_proposal":           func() codec { return new(MLSMessage) },
	"public_message_commit":             func() codec { return new(MLSMessage) },
	"private_message":                   func() codec { return new(MLSMessage) },
}

// TestMessagesVectors decodes and re-encodes every field of
// messages.cs1.json (RFC 9420 structures incl. GREASE and unknown values):
// the bytes must be identical.
func TestMessagesVectors(t *testing.T) {
	cases := vectorCases[vectorfmt.Messages](t, "messages.cs1.json")
	for i, c := range cases {
		if len(c) != len(messageCodecs) {
			t.Errorf("case %d has %d fields, want %d", i, len(c), len(messageCodecs))
		}
		for field, hx := range c {
			newV, ok := messageCodecs[field]
			if !ok {
				t.Errorf("case %d: unknown field %q", i, field)
				continue
			}
			in := []byte(hx)
			v := newV()
			if err := decodeAll(in, v, field); err != nil {
				t.Errorf("case %d %s: %v", i, field, err)
				continue
			}
			if out := encode(v); !bytes.Equal(out, in) {
				t.Errorf("case %d %s: re-encoding differs:\n got %x\nwant %x", i, field, out, in)
			}
		}
	}
}

// TestMessagesWireFormats checks that each MLSMessage field of
// messages.json decodes to the wire format and content type it names.
func TestMessagesWireFormats(t *testing.T) {
	cases := vectorCases[vectorfmt.Messages](t, "messages.cs1.json")
	for i, c := range cases {
		check := func(field string, wf WireFormat, ct ContentType) {
			m, err := ParseMLSMessage(c[field])
			if err != nil {
				t.Errorf("case %d %s: %v", i, field, err)
				return
			}
			if m.WireFormat != wf {
				t.Errorf("case %d %s: wire format %d, want %d", i, field, m.WireFormat, wf)
			}
			if ct != 0 && m.PublicMessage.Content.ContentType != ct {
				t.Errorf("case %d %s: content type %d, want %d", i, field, m.PublicMessage.Content.ContentType, ct)
			}
		}
		check("mls_welcome", WireFormatWelcome, 0)
		check("mls_group_info", WireFormatGroupInfo, 0)
		check("mls_key_package", WireFormatKeyPackage, 0)
		check("public_message_application", WireFormatPublicMessage, ContentTypeApplication)
		check("public_message_proposal", WireFormatPublicMessage, ContentTypeProposal)
		check("public_message_commit", WireFormatPublicMessage, ContentTypeCommit)
		check("private_message", WireFormatPrivateMessage, 0)
	}
}

// TestDeserializationVectors runs deserialization.json through the vector
// reader the codec uses: a header followed by length bytes must decode to
// exactly that many bytes.
func TestDeserializationVectors(t *testing.T) {
	cases := vectorCases[vectorfmt.Deserialization](t, "deserialization.json")
	for _, c := range cases {
		hdr := []byte(c.Header)
		// A header announcing more bytes than follow is truncated input.
		s := cryptobyte.String(append(hdr, 0))
		var body cryptobyte.String
		ok := wire.ReadVarVector(&s, &body)
		if want := c.Length <= 1; ok != want {
			t.Errorf("ReadVarVector(%x + 1 byte) ok = %v, want %v", c.Header, ok, want)
		}
		s = cryptobyte.String(hdr)
		var n uint64
		if !wire.ReadVarint(&s, &n) || !s.Empty() || n != c.Length {
			t.Errorf("ReadVarint(%x) = %d, want %d", c.Header, n, c.Length)
		}
		if enc := wire.AppendVarint(nil, c.Length); !bytes.Equal(enc, hdr) {
			t.Errorf("AppendVarint(%d) = %x, want %x", c.Length, enc, c.Header)
		}
		if c.Length < 1<<16 {
			in := append(hdr, make([]byte, c.Length)...)
			d := newDecoder(in)
			var out []byte
			if !d.opaque("v", &out) || !d.s.Empty() || uint64(len(out)) != c.Length {
				t.Errorf("decoder.opaque(header %x + %d bytes) = %d bytes, rest %d", c.Header, c.Length, len(out), len(d.s))
			}
		}
	}
}

// TestStrictDecoding checks the negative cases the vectors lack:
// non-minimal length headers, the 0b11 prefix, truncation, trailing bytes
// and bad enum values.
func TestStrictDecoding(t *testing.T) {
	cases := vectorCases[vectorfmt.Messages](t, "messages.cs1.json")
	kp := cases[0]["mls_key_package"]
	commit := cases[0]["commit"]

	// A GroupSecrets with a one-byte joiner secret, then variants.
	good := []byte{0x01, 0xaa, 0x00, 0x00}
	tests := []struct {
		name string
		in   []byte
		v    unmarshaler
	}{
		{"non-minimal 2-byte length", []byte{0x40, 0x01, 0xaa, 0x00, 0x00}, new(GroupSecrets)},
		{"non-minimal 4-byte length", []byte{0x80, 0x00, 0x00, 0x01, 0xaa, 0x00, 0x00}, new(GroupSecrets)},
		{"0b11 length prefix", []byte{0xc0, 0, 0, 0, 0, 0, 0, 1, 0xaa, 0x00, 0x00}, new(GroupSecrets)},
		{"bad optional octet", []byte{0x01, 0xaa, 0x02, 0x00}, new(GroupSecrets)},
		{"trailing byte", append(append([]byte{}, good...), 0), new(GroupSecrets)},
		{"truncated", good[:len(good)-1], new(GroupSecrets)},
		{"key package truncated", kp[:len(kp)-1], new(MLSMessage)},
		{"key package trailing", append(append([]byte{}, kp...), 0), new(MLSMessage)},
		{"commit trailing", append(append([]byte{}, commit...), 0), new(Commit)},
		{"unknown wire format", []byte{0x00, 0x01, 0x00, 0x09}, new(MLSMessage)},
		{"wrong version", append([]byte{0x00, 0x02}, kp[2:]...), new(MLSMessage)},
		{"sender type 0", []byte{0x00}, new(Sender)},
		{"proposal type 0", []byte{0x00, 0x00, 0x00}, &proposalBox{}},
		{"proposal-or-ref type 3", []byte{0x01, 0x03, 0x00}, new(Commit)},
		{"empty ratchet tree", []byte{0x00}, new(RatchetTree)},
		{"trailing blank node", []byte{0x01, 0x00}, new(RatchetTree)},
		{"parent node at a leaf position", []byte{0x05, 0x01, 0x02, 0x00, 0x00, 0x00}, new(RatchetTree)},
		{"duplicate extension", []byte{0x06, 0x0a, 0x0a, 0x00, 0x0a, 0x0a, 0x00}, new(extensionList)},
	}
	if err := decodeAll(good, new(GroupSecrets), "GroupSecrets"); err != nil {
		t.Fatalf("baseline GroupSecrets: %v", err)
	}
	if err := decodeAll([]byte{0x06, 0x0a, 0x0a, 0x00, 0x1a, 0x1a, 0x00}, new(extensionList), "extensions"); err != nil {
		t.Fatalf("baseline extensions: %v", err)
	}
	for _, tt := range tests {
		err := decodeAll(tt.in, tt.v, tt.name)
		var pe *ParseError
		if err == nil || !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode(%x) = %v, want a *ParseError", tt.name, tt.in, err)
		}
	}
}

// extensionList decodes a bare extension list, for the duplicate-extension
// test.
type extensionList struct{ exts []Extension }

func (g *extensionList) unmarshal(d *decoder) bool {
	return readExtensions(d, &g.exts)
}
