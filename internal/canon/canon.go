// Package canon produces the RFC 8785 JSON Canonicalization Scheme (JCS)
// form that Governed Objects (draft-chapman-a2a-mls-03 Section 5.3) and DID
// Bearer token claims are signed over.
//
// It wraps internal/jcs (written from RFC 8785; its test compares it with
// github.com/gowebpki/jcs, the library the project's design names, which
// links package regexp) rather than encoding/json: encoding/json escapes <, > and & and U+2028/
// U+2029 where JCS and JavaScript do not, sorts map keys by UTF-8 bytes where
// JCS sorts by UTF-16 code units (they differ for keys outside the BMP
// against keys in U+E000–U+FFFF), formats numbers its own way, and decodes a
// lone-surrogate escape to U+FFFD where JavaScript keeps it. The text is
// read by internal/strictjson, the module's one strict reader, which
// rejects what RFC 8785 and I-JSON (RFC 7493) forbid: duplicate member
// names, lone surrogates, invalid UTF-8 and numbers outside the IEEE 754
// double range, and nesting deeper than strictjson.MaxDepth.
package canon

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/internal/jcs"
)

// Transform returns the canonical form of the JSON text b. It returns an
// error wrapping a *strictjson.Error for text that is not a single I-JSON
// value: invalid syntax, a duplicate member name, a lone surrogate, invalid
// UTF-8, a number out of range or nesting too deep.
func Transform(b []byte) ([]byte, error) {
	if b == nil {
		return nil, errors.New("canon: no JSON text")
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return out, nil
}

// Append appends the canonical form of the JSON text b to dst, as
// Transform returns it, with Transform's errors.
func Append(dst, b []byte) ([]byte, error) {
	if b == nil {
		return nil, errors.New("canon: no JSON text")
	}
	out, err := jcs.Append(dst, b)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return out, nil
}

// Marshal encodes v with encoding/json and returns the canonical form of
// the result. Strings that are not valid UTF-8 are coerced to U+FFFD by
// encoding/json before canonicalisation.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return Transform(b)
}
