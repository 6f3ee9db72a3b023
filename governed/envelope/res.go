package envelope

import (
	"fmt"
	"strings"
)

// resource is a parsed resource pattern: scheme and host case-folded, then
// the path's segments. A wildcard ("*" one segment, "**" the subtree, one or
// more segments) may only be the last segment.
type resource struct {
	scheme, host string
	segs         []string
}

// parseResource splits a resource pattern scheme://host/seg/... into
// segments. Dot-segments, empty segments and percent-encoded separators
// ("%2F", "%5C") are refused, as are wildcards anywhere but the end and
// wildcards inside a segment ("a*").
func parseResource(s string) (resource, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return resource{}, fmt.Errorf("%w: resource %q has no scheme", ErrMalformed, s)
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "" {
		return resource{}, fmt.Errorf("%w: resource %q has no host", ErrMalformed, s)
	}
	r := resource{scheme: strings.ToLower(scheme), host: strings.ToLower(parts[0]), segs: parts[1:]}
	for i, seg := range r.segs {
		low := strings.ToLower(seg)
		switch {
		case seg == "" || seg == "." || seg == "..":
			return resource{}, fmt.Errorf("%w: resource %q has an empty or dot segment", ErrMalformed, s)
		case strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(seg, "\\"):
			return resource{}, fmt.Errorf("%w: resource %q has an encoded separator", ErrMalformed, s)
		case (seg == "*" || seg == "**") && i != len(r.segs)-1:
			return resource{}, fmt.Errorf("%w: resource %q has a wildcard before its end", ErrMalformed, s)
		case seg != "*" && seg != "**" && strings.Contains(seg, "*"):
			return resource{}, fmt.Errorf("%w: resource %q has a partial wildcard", ErrMalformed, s)
		}
	}
	return r, nil
}

// CoversRes reports whether the parent pattern covers every resource the
// child pattern names. Malformed patterns are covered by nothing.
func CoversRes(parent, child string) bool {
	p, err := parseResource(parent)
	if err != nil {
		return false
	}
	c, err := parseResource(child)
	if err != nil || p.scheme != c.scheme || p.host != c.host {
		return false
	}
	for i, ps := range p.segs {
		switch {
		case ps == "**":
			return len(c.segs) > i
		case i >= len(c.segs):
			return false
		case ps == "*":
			return len(c.segs) == i+1 && c.segs[i] != "**"
		case ps != c.segs[i]:
			return false
		}
	}
	return len(c.segs) == len(p.segs)
}
