package mls

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// parseErrorKeyPackage is a KeyPackage to truncate in parseErrorCases.
var parseErrorKeyPackage = func() []byte {
	key := bytes.Repeat([]byte{0xaa}, 32)
	return (&KeyPackage{
		Version:     ProtocolMLS10,
		CipherSuite: CipherSuiteX25519AES128SHA256Ed25519,
		InitKey:     key,
		LeafNode: LeafNode{
			EncryptionKey: key,
			SignatureKey:  key,
			Credential:    NewBasicCredential([]byte("alice")),
			Source:        LeafNodeSourceUpdate,
		},
	}).Marshal()
}()

// parseErrorSigKeyAt is the offset of the KeyPackage's signature_key:
// version, cipher_suite: 4 bytes; init_key: 33; encryption_key: 33.
const parseErrorSigKeyAt = 4 + 33 + 33

// parseErrorWelcome is a Welcome whose second secret's new_member runs past
// the end of the secrets vector: cipher_suite, secrets header (8 bytes),
// secrets[0] (6 bytes), then new_member<2> with 1 byte left.
var parseErrorWelcome = []byte{0x00, 0x01, 0x08, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x02, 0x04}

// parseErrorCases are inputs that fail to decode, with the error each must
// give.
var parseErrorCases = []struct {
	name string
	in   []byte
	v    unmarshaler
	want string
}{
	{"truncated nested vector", parseErrorKeyPackage[:parseErrorSigKeyAt+1+3], new(KeyPackage),
		"mls: KeyPackage.leaf_node.signature_key at offset 70: truncated vector, need 32 bytes, have 3"},
	{"vector element", parseErrorWelcome, new(Welcome),
		"mls: Welcome.secrets[1].new_member at offset 9: truncated vector, need 2 bytes, have 1"},
	{"truncated integer", parseErrorKeyPackage[:3], new(KeyPackage),
		"mls: KeyPackage.cipher_suite at offset 2: truncated uint16, need 2 bytes, have 1"},
	{"missing length header", parseErrorKeyPackage[:parseErrorSigKeyAt], new(KeyPackage),
		"mls: KeyPackage.leaf_node.signature_key at offset 70: truncated length header, need 1 byte, have 0"},
	{"non-minimal length", []byte{0x40, 0x01, 0xaa, 0x00, 0x00}, new(GroupSecrets),
		"mls: GroupSecrets.joiner_secret at offset 0: length header 40 01 is not minimal"},
	{"0b11 length prefix", []byte{0x01, 0xaa, 0x00, 0xc0, 0, 0, 0, 0, 0, 0, 0}, new(GroupSecrets),
		"mls: GroupSecrets.psks at offset 3: length header 0xc0 uses the reserved prefix 0b11"},
	{"bad optional octet", []byte{0x01, 0xaa, 0x02, 0x00}, new(GroupSecrets),
		"mls: GroupSecrets.path_secret at offset 2: presence octet 2, want 0 or 1"},
	{"trailing bytes", []byte{0x01, 0xaa, 0x00, 0x00, 0x07, 0x07}, new(GroupSecrets),
		"mls: GroupSecrets at offset 4: 2 trailing bytes"},
	{"unknown wire format", []byte{0x00, 0x01, 0x00, 0x09}, new(MLSMessage),
		"mls: MLSMessage.wire_format at offset 2: unknown value 9"},
	{"unknown proposal-or-ref type", []byte{0x01, 0x03, 0x00}, new(Commit),
		"mls: Commit.proposals[0].type at offset 1: unknown value 3"},
	{"wrong node type", []byte{0x05, 0x01, 0x02, 0x00, 0x00, 0x00}, new(RatchetTree),
		"mls: RatchetTree.ratchet_tree[0].node_type at offset 2: 2 at a leaf position, want leaf (1)"},
	{"last node blank", []byte{0x01, 0x00}, new(RatchetTree),
		"mls: RatchetTree.ratchet_tree at offset 0: last node is blank"},
	{"duplicate extension", []byte{0x06, 0x0a, 0x0a, 0x00, 0x0a, 0x0a, 0x00}, new(extensionList),
		"mls: extensions.extensions[1].extension_type at offset 4: duplicate extension type 0x0a0a"},
	{"fixed-size field", []byte{0, 0, 0, 1, 0, 0, 0, 2, 0xee, 0xee}, new(SenderData),
		"mls: SenderData.reuse_guard at offset 8: truncated fixed-size value, need 4 bytes, have 2"},
	{"select in a proposal", []byte{0x00, 0x04, 0x03}, &proposalBox{},
		"mls: Proposal.psk.psk.psktype at offset 2: unknown value 3"},
}

// TestParseErrorWhere checks that a decode failure names the field that
// failed, its offset and the reason, and still matches ErrMalformed.
func TestParseErrorWhere(t *testing.T) {
	for _, tt := range parseErrorCases {
		structName, _, _ := strings.Cut(strings.TrimPrefix(tt.want, "mls: "), ".")
		structName, _, _ = strings.Cut(structName, " ")
		err := decodeAll(tt.in, tt.v, structName)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: decode(%x) = %v, want %q", tt.name, tt.in, err, tt.want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode(%x) = %#v, want a *ParseError matching ErrMalformed", tt.name, tt.in, err)
		}
	}
}

// TestParseErrorPublic checks the exported parsers report field and offset
// and keep the structure name other packages test (session tells a bad
// RatchetTree by it).
func TestParseErrorPublic(t *testing.T) {
	_, err := ParseRatchetTree([]byte{0x02, 0x01, 0x03})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Struct != "RatchetTree" || pe.Field != "ratchet_tree[0].node_type" || pe.Offset != 2 {
		t.Errorf("ParseRatchetTree(02 01 03) = %#v, want RatchetTree.ratchet_tree[0].node_type at 2", err)
	}
	_, err = ParseWelcome([]byte{0x00})
	if want := "mls: Welcome.cipher_suite at offset 0: truncated uint16, need 2 bytes, have 1"; err == nil || err.Error() != want {
		t.Errorf("ParseWelcome(00) = %v, want %q", err, want)
	}
}

// TestDecodeNoAllocs checks that tracking the field path costs no
// allocation: a structure whose decoded value needs none is decoded with
// only the decoder itself on the heap.
func TestDecodeNoAllocs(t *testing.T) {
	in := []byte{0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3, 4}
	var sd SenderData
	allocs := testing.AllocsPerRun(100, func() {
		if err := decodeAll(in, &sd, "SenderData"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("decoding a SenderData: %v allocations, want at most 1", allocs)
	}
}
