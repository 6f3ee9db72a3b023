package tuf

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The member names of the objects this package reads (Sections 4.2–4.6).
var (
	envelopeNames  = []string{"signed", "signatures"}
	signatureNames = []string{"keyid", "sig"}
	commonNames    = []string{"_type", "spec_version", "version", "expires"}
	roleNames      = map[string][]string{
		RoleRoot:      {"consistent_snapshot", "keys", "roles"},
		RoleTimestamp: {"meta"},
		RoleSnapshot:  {"meta"},
		RoleTargets:   {"targets", "delegations"},
	}
	keyNames        = []string{"keytype", "scheme", "keyval"}
	keyValNames     = []string{"public"}
	roleEntryNames  = []string{"keyids", "threshold"}
	metaFileNames   = []string{"length", "hashes", "version"}
	targetFileNames = []string{"length", "hashes", "custom"}
)

// exactNames refuses a member whose name differs only in case from one
// this package reads ("Version" beside or instead of "version"):
// encoding/json would read it as that member, a reader that compares
// names exactly (Section 4.2 names them in lower case) would not. It
// walks the envelope b of role and the objects of its "signed" object
// whose members Section 4 names; it does not walk into "custom".
func exactNames(b []byte, role string) error {
	env, err := members(b, envelopeNames)
	if err != nil {
		return err
	}
	var sigs []json.RawMessage
	if s := env["signatures"]; s != nil && json.Unmarshal(s, &sigs) == nil {
		for _, s := range sigs {
			if _, err := members(s, signatureNames); err != nil {
				return err
			}
		}
	}
	signed, err := members(env["signed"], append(append([]string(nil), commonNames...), roleNames[role]...))
	if err != nil {
		return err
	}
	switch role {
	case RoleRoot:
		return rootNames(signed)
	case RoleTimestamp, RoleSnapshot:
		return eachEntry(signed["meta"], metaFileNames)
	}
	return eachEntry(signed["targets"], targetFileNames)
}

func rootNames(signed map[string]json.RawMessage) error {
	if err := eachEntry(signed["roles"], roleEntryNames); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(signed["keys"], &keys) != nil {
		return nil // not an object: the typed parse refuses it
	}
	for _, k := range keys {
		m, err := members(k, keyNames)
		if err != nil {
			return err
		}
		if _, err := members(m["keyval"], keyValNames); err != nil {
			return err
		}
	}
	return nil
}

// eachEntry checks the names of every object that is a value of the
// object b (a map keyed by path, file name or role name).
func eachEntry(b json.RawMessage, names []string) error {
	var entries map[string]json.RawMessage
	if json.Unmarshal(b, &entries) != nil {
		return nil
	}
	for _, e := range entries {
		if _, err := members(e, names); err != nil {
			return err
		}
	}
	return nil
}

// members returns the members of the object b (nil if b is not one) and
// an error if a member's name equals one of names but for case.
func members(b json.RawMessage, names []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return nil, nil
	}
	for name := range m {
		for _, n := range names {
			if name != n && strings.EqualFold(name, n) {
				return nil, fmt.Errorf("member %q: Section 4 names it %q", name, n)
			}
		}
	}
	return m, nil
}
