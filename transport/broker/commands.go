package broker

import (
	"bytes"
	"strings"
	"sync/atomic"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/torpor-dev/torpor/did"
)

// Command is a message the broker carried on a device's cmd topic, as
// the function of Config.OnCommand (or Broker.ObserveCommands) sees it. The broker does not read the payload: the
// relay verifies the command object and records it (transport/relay,
// auditcmd.go).
type Command struct {
	// Operator is the DID the publisher's connection token proved.
	Operator did.DID
	// Device is the topic's device name.
	Device      string
	ContentType string
	Payload     []byte
}

// commandHook calls the observer of commands for every message a client
// published on a device's cmd topic once the broker accepted it (the ACL
// lets only operators publish there).
type commandHook struct {
	mqtt.HookBase
	prefix string
	on     atomic.Pointer[func(Command)]
}

// ID implements mqtt.Hook.
func (h *commandHook) ID() string { return "torpor-command-audit" }

// Provides implements mqtt.Hook.
func (h *commandHook) Provides(b byte) bool { return b == mqtt.OnPublished }

// OnPublished implements mqtt.Hook.
func (h *commandHook) OnPublished(cl *mqtt.Client, pk packets.Packet) {
	on := h.on.Load()
	if on == nil || *on == nil || cl.Net.Inline {
		return
	}
	rest, ok := strings.CutPrefix(pk.TopicName, h.prefix+"/")
	if !ok {
		return
	}
	name, kind, ok := strings.Cut(rest, "/")
	if !ok || kind != "cmd" {
		return
	}
	op, err := did.Parse(string(cl.Properties.Username))
	if err != nil {
		return
	}
	(*on)(Command{Operator: op, Device: name, ContentType: pk.Properties.ContentType, Payload: bytes.Clone(pk.Payload)})
}
