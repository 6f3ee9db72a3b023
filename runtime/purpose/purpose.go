// Package purpose matches Governed Object purposes (draft-chapman-a2a-mls-03
// Section 5.2: lowercase, colon-delimited, hierarchical strings such as
// comms:message) against the patterns the agent's configuration uses to
// route, permit and gate them.
//
// A pattern is an exact purpose ("comms:message"), a prefix ending in ":*"
// that matches every purpose below it ("action:*" matches "action:capture"
// and "action:hold:extend" but not "action" or "actions:x"), or "*" alone,
// which matches everything. Nothing else is a wildcard: like the Autonomy
// Envelope's closed scope algebra, wildcards are terminal only, so a
// pattern's reach is obvious from its text.
package purpose

import (
	"fmt"
	"strings"
)

// Valid reports whether p is a syntactically valid purpose: non-empty,
// lowercase ASCII letters, digits, '-', '_' and '.', in colon-separated
// segments none of which is empty.
func Valid(p string) bool {
	if p == "" {
		return false
	}
	for _, seg := range strings.Split(p, ":") {
		if !validSegment(seg) {
			return false
		}
	}
	return true
}

func validSegment(seg string) bool {
	if seg == "" {
		return false
	}
	for _, r := range seg {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// CheckPattern returns an error if pattern is not "*", a valid purpose, or
// a valid purpose followed by ":*".
func CheckPattern(pattern string) error {
	if pattern == "*" {
		return nil
	}
	base := strings.TrimSuffix(pattern, ":*")
	if !Valid(base) {
		return fmt.Errorf("purpose: invalid pattern %q (want \"*\", a purpose like comms:message, or a prefix like action:*)", pattern)
	}
	return nil
}

// Match reports whether purpose p matches pattern.
func Match(pattern, p string) bool {
	if pattern == "*" {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, ":*"); ok {
		return strings.HasPrefix(p, base+":") && len(p) > len(base)+1
	}
	return pattern == p
}

// Set is a list of patterns. The zero Set matches nothing.
type Set []string

// ParseSet splits a comma-separated list of patterns and checks each.
func ParseSet(s string) (Set, error) {
	var out Set
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if err := CheckPattern(f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Match reports whether p matches any pattern of s.
func (s Set) Match(p string) bool {
	for _, pat := range s {
		if Match(pat, p) {
			return true
		}
	}
	return false
}
