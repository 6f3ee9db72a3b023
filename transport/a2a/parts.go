// Package a2a holds the A2A protocol types Torpor speaks: messages and
// their parts in both the A2A v1.0 and v0.3 JSON shapes, the JSON-RPC 2.0
// envelope, the three Atom part kinds of draft-chapman-a2a-mls-03 Section 7
// (Governed Object, MLS wire, MLS handshake), and the Agent Card with its
// extensions and signature.
//
// # Reading parts (draft Section 7.3)
//
// A part is identified by its media type alone, never by its shape or by the
// message's extensions member. The reader takes the part's own mediaType
// when it is non-empty, falls back to the mediaType inside its data object
// otherwise, and rejects the part when both are present and differ, when
// neither is present, or when its content is not data (a text part that
// claims one of these media types is not admitted). Media types are compared
// as exact strings: no trimming, case folding or parameter reordering,
// because two receivers that normalise differently would read the same part
// as different messages. An A2A v0.3 part ({"kind":"data","data":{…}}, media
// type only inside data) reads like a v1.0 part.
//
// Rejections are *PartError values whose Reason is one of the machine
// reasons of the conformance vectors: media-type-conflict,
// media-type-not-matched or malformed; ObjectMediaType adds
// no-governed-object for a well-formed part that is none of the three.
//
// # What an agent takes
//
// ObjectMediaType decides whether an agent takes a part, and Refusal
// whether it takes anything of a message; ObjectRejected is its answer when
// it takes nothing. The agent and the relay both use them, so the answer is
// the same whether the agent is awake or asleep (object.go).
//
// # Writing parts
//
// Writers set the media type in both places (Section 7.3: MUST on the part,
// SHOULD inside data) so that v0.3 readers, which look only inside data,
// keep working. Part.ForVersion returns the v0.3 shape for a v0.3 peer.
package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

// Media types of the Atom parts (draft Section 11.1).
const (
	// MediaTypeDataObject identifies a part carrying a Governed Object
	// unencrypted (Section 7.4).
	MediaTypeDataObject = "application/vnd.atom.data-object+json;version=1"
	// MediaTypeMLSWire identifies a part carrying an MLSMessage (Section
	// 7.5).
	MediaTypeMLSWire = "application/vnd.atom.mls-wire+cbor;version=1"
	// MediaTypeMLSHandshake identifies a part carrying a Welcome, ratchet
	// tree and/or Commit (Section 7.6).
	MediaTypeMLSHandshake = "application/vnd.atom.mls-handshake+json;version=1"
	// MediaTypeEncryptedDataObject is the mediaType the reference puts in
	// the decrypted MLS application plaintext {"mediaType":…,"object":GO};
	// the draft requires only the object member.
	MediaTypeEncryptedDataObject = "application/vnd.atom.encrypted-data-object+json;version=1"
)

// Sentinels of part reading, each wrapped in a *PartError.
var (
	// ErrMediaTypeConflict is returned when the part's mediaType and the
	// data object's mediaType are both present and differ.
	ErrMediaTypeConflict = errors.New("a2a: part media types conflict")
	// ErrMediaTypeNotMatched is returned when the part's effective media
	// type is not the one the caller reads.
	ErrMediaTypeNotMatched = errors.New("a2a: part media type not matched")
	// ErrMalformedPart is returned when a part has no media type, its
	// content is not a data object, or its data lacks or mistypes a
	// member its kind requires.
	ErrMalformedPart = errors.New("a2a: malformed part")
	// ErrNoObject is returned for a well-formed part that carries nothing
	// an Atom agent takes: text, a file, data of another media type
	// (ObjectMediaType).
	ErrNoObject = errors.New("a2a: part carries no Governed Object")
)

// Machine reasons of part rejections, as the conformance vectors name them.
const (
	ReasonMediaTypeConflict   = "media-type-conflict"
	ReasonMediaTypeNotMatched = "media-type-not-matched"
	ReasonMalformed           = "malformed"
	// ReasonNoObject is Torpor's reason for ErrNoObject (no vector names
	// one).
	ReasonNoObject = "no-governed-object"
)

// PartError is a rejected part.
type PartError struct {
	Err    error  // ErrMediaTypeConflict, ErrMediaTypeNotMatched, ErrMalformedPart or ErrNoObject
	Detail string // what exactly is wrong, for operators
}

func (e *PartError) Error() string { return e.Err.Error() + ": " + e.Detail }

// Unwrap returns the sentinel.
func (e *PartError) Unwrap() error { return e.Err }

// Reason returns the machine reason: media-type-conflict,
// media-type-not-matched, no-governed-object or malformed.
func (e *PartError) Reason() string {
	switch e.Err {
	case ErrMediaTypeConflict:
		return ReasonMediaTypeConflict
	case ErrMediaTypeNotMatched:
		return ReasonMediaTypeNotMatched
	case ErrNoObject:
		return ReasonNoObject
	}
	return ReasonMalformed
}

func partErr(err error, format string, args ...any) error {
	return &PartError{Err: err, Detail: fmt.Sprintf(format, args...)}
}

// Part is one A2A message part in either wire shape. In A2A v1.0 the
// content is one of text, raw, url or data and mediaType is a member of
// the part; in v0.3 kind names the content ("text", "file", "data") and
// there is no part-level mediaType. Members Torpor does not interpret are
// kept as raw JSON so that a part passes through unchanged.
type Part struct {
	// Kind is the v0.3 discriminator; empty in v1.0.
	Kind string `json:"kind,omitempty"`
	// Text is the content of a text part.
	Text *string `json:"text,omitempty"`
	// Data is the content of a data part, any JSON value (an object for
	// every Atom part).
	Data json.RawMessage `json:"data,omitempty"`
	// Raw, URL and File are the other content kinds (v1.0 raw and url,
	// v0.3 file), kept opaque.
	Raw  json.RawMessage `json:"raw,omitempty"`
	URL  json.RawMessage `json:"url,omitempty"`
	File json.RawMessage `json:"file,omitempty"`
	// Filename is the v1.0 file name of raw or url content.
	Filename string `json:"filename,omitempty"`
	// MediaType is the v1.0 part-level media type.
	MediaType string `json:"mediaType,omitempty"`
	// Metadata is kept opaque.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// ForVersion returns the part in the shape of A2A version v ("1.0" or
// "0.3"). The v0.3 shape carries kind and drops the part-level mediaType
// (v0.3 has none), so the data object's own mediaType must be set, as the
// writers of this package do.
func (p Part) ForVersion(v string) Part {
	if v != "0.3" {
		p.Kind = ""
		return p
	}
	p.MediaType = ""
	switch {
	case p.Data != nil:
		p.Kind = "data"
	case p.Text != nil:
		p.Kind = "text"
	case p.File != nil || p.Raw != nil || p.URL != nil:
		p.Kind = "file"
	}
	return p
}

// MediaTypeOf returns the effective media type of a data part by the rules
// of Section 7.3, and the members of its data object. It returns a
// *PartError for a part whose content is not a data object (malformed), a
// part without any media type (malformed) and a part whose two media types
// differ (media-type-conflict).
func MediaTypeOf(p Part) (string, map[string]json.RawMessage, error) {
	return mediaTypeOf(p, canon.MemberMap)
}

// mediaTypeOf is MediaTypeOf with the function that splits the data
// object into its members: canon.MemberMap, or checkedMembers for a part
// of a body ParseRequest already checked for duplicates.
func mediaTypeOf(p Part, members func([]byte) (map[string]json.RawMessage, error)) (string, map[string]json.RawMessage, error) {
	if p.Data == nil || p.Text != nil || p.Raw != nil || p.URL != nil || p.File != nil || (p.Kind != "" && p.Kind != "data") {
		return "", nil, partErr(ErrMalformedPart, "content is not data")
	}
	data, err := members(p.Data)
	if err != nil {
		return "", nil, partErr(ErrMalformedPart, "data is not a JSON object: %v", err)
	}
	var inner string
	if raw, ok := data["mediaType"]; ok {
		if err := UnquoteString(raw, &inner); err != nil {
			return "", nil, partErr(ErrMalformedPart, "data.mediaType is not a string")
		}
	}
	switch {
	case p.MediaType != "" && inner != "" && p.MediaType != inner:
		return "", nil, partErr(ErrMediaTypeConflict, "part says %q, data says %q", p.MediaType, inner)
	case p.MediaType != "":
		return p.MediaType, data, nil
	case inner != "":
		return inner, data, nil
	}
	return "", nil, partErr(ErrMalformedPart, "no media type on the part or in its data")
}

// ReadPart returns the data members of p if its effective media type is
// exactly want (Section 7.3), else a *PartError.
func ReadPart(p Part, want string) (map[string]json.RawMessage, error) {
	return readPart(p, want, canon.MemberMap)
}

// readPart is ReadPart with the function that splits the data object into
// its members (mediaTypeOf).
func readPart(p Part, want string, members func([]byte) (map[string]json.RawMessage, error)) (map[string]json.RawMessage, error) {
	mt, data, err := mediaTypeOf(p, members)
	if err != nil {
		return nil, err
	}
	if mt != want {
		return nil, partErr(ErrMediaTypeNotMatched, "part is %q, want %q", mt, want)
	}
	return data, nil
}

// newPart returns a data part with mediaType in both positions and the
// given data members; the members are marshalled in the order given by
// data's struct.
//
// encoding/json escapes <, > and & even inside a json.RawMessage unless told
// not to; the escaped text means the same JSON (a Governed Object's
// signature covers its canonical form, not its bytes), but a part we write
// keeps the object's bytes as given.
func newPart(mediaType string, data any) (Part, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return Part{}, fmt.Errorf("a2a: %v", err)
	}
	return Part{Data: bytes.TrimSuffix(buf.Bytes(), []byte("\n")), MediaType: mediaType}, nil
}

// DataObjectPart is the content of a Governed Object part (Section 7.4).
type DataObjectPart struct {
	// Object is the Governed Object exactly as received; parse and verify
	// it with package governed.
	Object json.RawMessage
}

// ReadDataObject reads p as a Governed Object part. The object member must
// be a JSON object; it is returned unverified.
func ReadDataObject(p Part) (DataObjectPart, error) {
	data, err := ReadPart(p, MediaTypeDataObject)
	if err != nil {
		return DataObjectPart{}, err
	}
	obj := data["object"]
	if !isObject(obj) {
		return DataObjectPart{}, partErr(ErrMalformedPart, "data.object is not a JSON object")
	}
	return DataObjectPart{Object: obj}, nil
}

// Part returns d as a part.
func (d DataObjectPart) Part() (Part, error) {
	if !isObject(d.Object) {
		return Part{}, errors.New("a2a: data object part needs a JSON object")
	}
	return newPart(MediaTypeDataObject, struct {
		MediaType string          `json:"mediaType"`
		Object    json.RawMessage `json:"object"`
	}{MediaTypeDataObject, d.Object})
}

// MLSWire is the content of an MLS wire part (Section 7.5).
type MLSWire struct {
	// Wire is the MLSMessage as serialised per RFC 9420 Section 6.
	Wire []byte
	// SenderDID optionally names the sender for multi-recipient fan-out;
	// the zero DID when absent. It is a claim, to be bound to MLS
	// authentication by the receiver.
	SenderDID did.DID
}

// ReadMLSWire reads p as an MLS wire part: wire is required, standard
// base64 (padding optional on input); senderDid, when present, must be a
// did:key.
func ReadMLSWire(p Part) (MLSWire, error) {
	// The members are read into copies (base64 decoded, a DID parsed)
	// and not kept.
	data, err := readPart(p, MediaTypeMLSWire, canon.MemberView)
	if err != nil {
		return MLSWire{}, err
	}
	var w MLSWire
	if w.Wire, err = b64Member(data, "wire", true); err != nil {
		return MLSWire{}, err
	}
	if w.SenderDID, err = didMember(data, "senderDid", false); err != nil {
		return MLSWire{}, err
	}
	return w, nil
}

// Part returns w as a part.
func (w MLSWire) Part() (Part, error) {
	if len(w.Wire) == 0 {
		return Part{}, errors.New("a2a: MLS wire part needs wire bytes")
	}
	var sender string
	if !w.SenderDID.IsZero() {
		sender = w.SenderDID.String()
	}
	return newPart(MediaTypeMLSWire, struct {
		MediaType string `json:"mediaType"`
		Wire      string `json:"wire"`
		SenderDID string `json:"senderDid,omitempty"`
	}{MediaTypeMLSWire, base64.StdEncoding.EncodeToString(w.Wire), sender})
}

// Handshake is the content of an MLS handshake part (Section 7.6).
type Handshake struct {
	// InitiatorDID created the Welcome, or is the designated committer.
	InitiatorDID did.DID
	// Welcome is the MLSMessage carrying a Welcome; nil for commit-only
	// objects.
	Welcome []byte
	// RatchetTree accompanies Welcome (required with it).
	RatchetTree []byte
	// Commit is an optional public Commit.
	Commit []byte
	// MemberDIDs is an optional hint of the membership after the change;
	// the ratchet tree is authoritative.
	MemberDIDs []did.DID
	// InitiatorEndpoint is the reference's optional initiator URL.
	InitiatorEndpoint string
}

// ReadHandshake reads p as an MLS handshake part. initiatorDid is required
// and must be a did:key; at least one of welcome and commit is required; a
// welcome requires a ratchetTree (Section 7.6). The reference also demands
// ratchetTree for commit-only objects; this reader follows the draft, which
// makes it optional there.
func ReadHandshake(p Part) (Handshake, error) {
	data, err := ReadPart(p, MediaTypeMLSHandshake)
	if err != nil {
		return Handshake{}, err
	}
	var h Handshake
	if h.InitiatorDID, err = didMember(data, "initiatorDid", true); err != nil {
		return Handshake{}, err
	}
	if h.Welcome, err = b64Member(data, "welcome", false); err != nil {
		return Handshake{}, err
	}
	if h.RatchetTree, err = b64Member(data, "ratchetTree", h.Welcome != nil); err != nil {
		return Handshake{}, err
	}
	if h.Commit, err = b64Member(data, "commit", false); err != nil {
		return Handshake{}, err
	}
	if h.Welcome == nil && h.Commit == nil {
		return Handshake{}, partErr(ErrMalformedPart, "handshake has neither welcome nor commit")
	}
	if h.MemberDIDs, err = didsMember(data, "memberDids"); err != nil {
		return Handshake{}, err
	}
	if raw, ok := data["initiatorEndpoint"]; ok {
		if err := json.Unmarshal(raw, &h.InitiatorEndpoint); err != nil {
			return Handshake{}, partErr(ErrMalformedPart, "initiatorEndpoint is not a string")
		}
	}
	return h, nil
}

// Part returns h as a part. It enforces the same rules as ReadHandshake.
func (h Handshake) Part() (Part, error) {
	if h.InitiatorDID.IsZero() || (h.Welcome == nil && h.Commit == nil) || (h.Welcome != nil && h.RatchetTree == nil) {
		return Part{}, errors.New("a2a: handshake part needs initiatorDid, welcome or commit, and ratchetTree with welcome")
	}
	var members []string
	for _, m := range h.MemberDIDs {
		members = append(members, m.String())
	}
	return newPart(MediaTypeMLSHandshake, struct {
		MediaType         string   `json:"mediaType"`
		InitiatorDID      string   `json:"initiatorDid"`
		Welcome           string   `json:"welcome,omitempty"`
		RatchetTree       string   `json:"ratchetTree,omitempty"`
		Commit            string   `json:"commit,omitempty"`
		MemberDIDs        []string `json:"memberDids,omitempty"`
		InitiatorEndpoint string   `json:"initiatorEndpoint,omitempty"`
	}{MediaTypeMLSHandshake, h.InitiatorDID.String(), b64(h.Welcome), b64(h.RatchetTree), b64(h.Commit), members, h.InitiatorEndpoint})
}

func b64(b []byte) string {
	if b == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

func isObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return len(s) >= 2 && s[0] == '{' && json.Valid(raw)
}

// b64Member decodes a standard base64 string member, padded or not. An
// absent member returns nil (an error when required); an empty string
// counts as absent, as the reference omits empty members.
func b64Member(data map[string]json.RawMessage, name string, required bool) ([]byte, error) {
	raw, ok := data[name]
	if text, plain := plainString(raw); plain && len(text) > 0 {
		// Base64 text without escapes: decoded from the member's bytes,
		// not from a copy of them.
		b, err := decodeBase64(text)
		if err != nil {
			return nil, partErr(ErrMalformedPart, "%s: %v", name, err)
		}
		return b, nil
	}
	var s string
	if ok {
		if err := UnquoteString(raw, &s); err != nil {
			return nil, partErr(ErrMalformedPart, "%s is not a string", name)
		}
	}
	if s == "" {
		if required {
			return nil, partErr(ErrMalformedPart, "%s is missing", name)
		}
		return nil, nil
	}
	b, err := DecodeBase64(s)
	if err != nil {
		return nil, partErr(ErrMalformedPart, "%s: %v", name, err)
	}
	return b, nil
}

// DecodeBase64 decodes standard base64 (RFC 4648 Section 4) with or
// without padding, the leniency the draft's senders need; URL-safe
// characters and white space are refused.
func DecodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

// decodeBase64 is DecodeBase64 of the text b.
func decodeBase64(b []byte) ([]byte, error) {
	enc := base64.RawStdEncoding.Strict()
	if bytes.HasSuffix(b, []byte("=")) {
		enc = base64.StdEncoding.Strict()
	}
	out := make([]byte, enc.DecodedLen(len(b)))
	n, err := enc.Decode(out, b)
	return out[:n], err
}

func didMember(data map[string]json.RawMessage, name string, required bool) (did.DID, error) {
	raw, ok := data[name]
	if !ok {
		if required {
			return did.DID{}, partErr(ErrMalformedPart, "%s is missing", name)
		}
		return did.DID{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return did.DID{}, partErr(ErrMalformedPart, "%s is not a string", name)
	}
	id, err := did.Parse(s)
	if err != nil {
		return did.DID{}, partErr(ErrMalformedPart, "%s: %v", name, err)
	}
	return id, nil
}

func didsMember(data map[string]json.RawMessage, name string) ([]did.DID, error) {
	raw, ok := data[name]
	if !ok {
		return nil, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, partErr(ErrMalformedPart, "%s is not an array of strings", name)
	}
	if len(ss) == 0 {
		return nil, nil
	}
	out := make([]did.DID, 0, len(ss))
	for _, s := range ss {
		id, err := did.Parse(s)
		if err != nil {
			return nil, partErr(ErrMalformedPart, "%s: %v", name, err)
		}
		out = append(out, id)
	}
	return out, nil
}
