package envelope

import (
	"errors"
	"strings"
	"unicode"
)

// errMediaType is returned by mediaType for a content type it cannot read.
var errMediaType = errors.New("malformed media type")

// mediaType returns the lower-cased type/subtype of the content type ct
// (RFC 9110, Section 8.3.1: media-type = type "/" subtype parameters),
// after checking that its parameters are well formed: each a token, "="
// and a token or quoted-string (RFC 9110, Sections 5.6.2 and 5.6.4), none
// named twice with different values. It reads as mime.ParseMediaType
// does, which the agent no longer links (docs/footprint.md); the
// differential tests hold the two to the same answers. Parameter values
// are not returned: the agent reads none.
func mediaType(ct string) (string, error) {
	base, _, _ := strings.Cut(ct, ";")
	mt := strings.TrimSpace(strings.ToLower(base))
	typ, rest := token(mt)
	if typ == "" {
		return "", errMediaType
	}
	if rest != "" { // a bare type, like mime's "form-data", has no subtype
		sub, after := "", ""
		if strings.HasPrefix(rest, "/") {
			sub, after = token(rest[1:])
		}
		if sub == "" || after != "" {
			return "", errMediaType
		}
	}
	if !validParams(ct[len(base):]) {
		return "", errMediaType
	}
	return mt, nil
}

// validParams reports whether s is a well-formed parameter list: each
// parameter ";" name "=" value, with white space around the separators,
// and a final ";" alone allowed.
func validParams(s string) bool {
	seen := map[string]string{}
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return true
		}
		name, value, rest, ok := param(s)
		if !ok {
			return strings.TrimSpace(s) == ";"
		}
		if v, dup := seen[name]; dup && v != value {
			return false
		}
		seen[name] = value
		s = rest
	}
}

// param reads one ";" name "=" value from the start of s.
func param(s string) (name, value, rest string, ok bool) {
	s, found := strings.CutPrefix(s, ";")
	if !found {
		return "", "", "", false
	}
	name, s = token(strings.TrimLeftFunc(s, unicode.IsSpace))
	if name == "" {
		return "", "", "", false
	}
	s, found = strings.CutPrefix(strings.TrimLeftFunc(s, unicode.IsSpace), "=")
	if !found {
		return "", "", "", false
	}
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if strings.HasPrefix(s, `"`) {
		value, rest, ok = quoted(s)
	} else {
		value, rest = token(s)
		ok = value != ""
	}
	return strings.ToLower(name), value, rest, ok
}

// quoted reads a quoted-string at the start of s (which begins with a
// quote) and returns its content. A backslash escapes only a tspecial;
// before anything else it stands for itself, as browsers send Windows
// paths unescaped. A CR or LF, or no closing quote, fails.
func quoted(s string) (value, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), s[i+1:], true
		case c == '\\' && i+1 < len(s) && tspecial(s[i+1]):
			b.WriteByte(s[i+1])
			i++
		case c == '\r' || c == '\n':
			return "", "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// token returns the longest prefix of s made of token characters (RFC
// 2045, Section 5.1: visible ASCII but the tspecials) and the rest.
func token(s string) (tok, rest string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || tspecial(c) {
			return s[:i], s[i:]
		}
	}
	return s, ""
}

func tspecial(c byte) bool { return strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 }
