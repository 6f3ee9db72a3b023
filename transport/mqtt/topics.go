package mqtt

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the topic prefix when none is configured.
const DefaultPrefix = "torpor/v1"

// Topics names the topics of one device under a prefix:
//
//	{prefix}/{device}/cmd     operator → device   commands (QoS 1, never retained)
//	{prefix}/{device}/reply   device → operators  signed replies (QoS 1)
//	{prefix}/{device}/status  device → operators  signed status (QoS 1, retained; the will)
//	{prefix}/{device}/event   device → operators  signed events (QoS 1)
//	{prefix}/{device}/sync    device → itself     the end-of-backlog probe
type Topics struct {
	Prefix string // DefaultPrefix when empty
	Device string // the device's name (CheckName)
}

func (t Topics) base() string {
	p := t.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return p + "/" + t.Device + "/"
}

// Command is the topic operators publish commands on.
func (t Topics) Command() string { return t.base() + "cmd" }

// Reply is the topic the device answers commands on.
func (t Topics) Reply() string { return t.base() + "reply" }

// Status is the device's retained status topic.
func (t Topics) Status() string { return t.base() + "status" }

// Event is the topic of the device's events.
func (t Topics) Event() string { return t.base() + "event" }

// Sync is the topic of the device's end-of-backlog probe (see Client).
func (t Topics) Sync() string { return t.base() + "sync" }

// Validate checks the prefix (CheckPrefix) and the device name (CheckName).
func (t Topics) Validate() error {
	if t.Prefix != "" {
		if err := CheckPrefix(t.Prefix); err != nil {
			return err
		}
	}
	return CheckName(t.Device)
}

// MaxNameLen is the longest device name.
const MaxNameLen = 128

// CheckName returns an error unless name is a valid device name: 1 to 128
// characters from A–Z, a–z, 0–9, '.', '_', '-' and ':' (so a did:key is a
// valid name). Nothing else, so a name can never be an MQTT wildcard ('+',
// '#'), a level separator or a $-topic (MQTT 5.0, Section 4.7).
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("mqtt: device name must be 1 to %d characters", MaxNameLen)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-', r == ':':
		default:
			return fmt.Errorf("mqtt: device name %q: character %q not allowed (use A-Z a-z 0-9 . _ - :)", name, r)
		}
	}
	return nil
}

// CheckPrefix returns an error unless p is a usable topic prefix: levels
// separated by '/', none empty, no wildcards, not starting with '$'.
func CheckPrefix(p string) error {
	if p == "" || strings.HasPrefix(p, "$") {
		return fmt.Errorf("mqtt: topic prefix %q must be non-empty and must not start with '$'", p)
	}
	for _, level := range strings.Split(p, "/") {
		if level == "" || strings.ContainsAny(level, "+#\x00") {
			return fmt.Errorf("mqtt: topic prefix %q: empty level or wildcard", p)
		}
	}
	return nil
}
