package broker

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// idSpaces keeps a client's packet identifiers apart from the broker's
// (docs/mqtt.md, mochi's defects 3 and 4).
//
// MQTT 5.0 Section 2.2.1 (and MQTT 3.1.1 Section 2.3.1) let the client and
// the server assign packet identifiers independently: a client's QoS 1 or 2
// PUBLISH may carry the identifier of a PUBLISH the server sent it and that
// is not acknowledged yet. mochi v2.7.9 keeps both directions in one table
// per client (Client.State.Inflight, keyed by identifier), and
// Server.processPublish deletes the table's entry with the identifier of
// the client's PUBLISH ("[MQTT-4.3.2-5]" in its server.go), then stores its
// own PUBACK or PUBREC under it: the broker's delivery, a command the device
// has not acknowledged, is forgotten (in memory and in its bolt store) and
// never sent again after the connection is lost.
//
// The hook moves such a client flow to an identifier of its own: when a
// client's PUBLISH (QoS 1 or 2) names an identifier the table holds for
// something else, the packet is given a free internal identifier as it is
// read (OnPacketRead), the acknowledgements mochi writes for it (PUBACK,
// PUBREC, PUBCOMP) get the client's identifier back as they are encoded
// (OnPacketEncode), and the client's PUBREL of a QoS 2 flow (MQTT 5.0
// Section 4.3.3) is moved like its PUBLISH. mochi also answers a SUBSCRIBE
// or UNSUBSCRIBE whose identifier the table holds with 0x91 (Packet
// Identifier in use): those are moved too, and their SUBACK or UNSUBACK
// gets the client's identifier back. Packets of the broker's own
// identifier space (the broker's PUBLISH and PUBREL, the client's PUBACK,
// PUBREC and PUBCOMP) are never touched. A mapping lives as long as the
// table holds the client flow's entry; boltHook stores it with that entry
// so that it survives a restart.
type idSpaces struct {
	mqtt.HookBase
	mu sync.Mutex
	// moved maps a client id to its moved flows: internal identifier →
	// the client's identifier.
	moved map[string]map[uint16]uint16
}

func newIDSpaces() *idSpaces { return &idSpaces{moved: map[string]map[uint16]uint16{}} }

// ID implements mqtt.Hook.
func (h *idSpaces) ID() string { return "torpor-packet-id-spaces" }

// Provides implements mqtt.Hook.
func (h *idSpaces) Provides(b byte) bool {
	return bytes.IndexByte([]byte{mqtt.OnPacketRead, mqtt.OnPacketEncode, mqtt.OnPacketProcessed,
		mqtt.OnSessionEstablish, mqtt.OnDisconnect, mqtt.OnClientExpired}, b) >= 0
}

// clientAck reports whether t is a packet the broker sends to acknowledge
// a client's PUBLISH or PUBREL, or keeps in the table for it: those carry
// the client's identifiers.
func clientAck(t byte) bool {
	return t == packets.Puback || t == packets.Pubrec || t == packets.Pubcomp
}

// clientSpace reports whether pk is a client's packet that carries an
// identifier of the client's space.
func clientSpace(pk packets.Packet) bool {
	switch pk.FixedHeader.Type {
	case packets.Publish:
		return pk.FixedHeader.Qos > 0
	case packets.Pubrel, packets.Subscribe, packets.Unsubscribe:
		return true
	}
	return false
}

// OnPacketRead implements mqtt.Hook: it moves a client's PUBLISH, PUBREL,
// SUBSCRIBE or UNSUBSCRIBE to its internal identifier.
func (h *idSpaces) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if clientSpace(pk) {
		pk.PacketID = h.inbound(cl, pk.PacketID, pk.FixedHeader.Type != packets.Pubrel)
	}
	return pk, nil
}

// OnPacketEncode implements mqtt.Hook: an acknowledgement of a moved flow
// goes out with the client's identifier.
func (h *idSpaces) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if t := pk.FixedHeader.Type; !clientAck(t) && t != packets.Suback && t != packets.Unsuback {
		return pk
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if id, ok := h.moved[cl.ID][pk.PacketID]; ok {
		pk.PacketID = id
	}
	return pk
}

// OnPacketProcessed implements mqtt.Hook: a moved flow whose entry has left
// the table (a QoS 1 PUBLISH acknowledged, a QoS 2 flow completed, a
// PUBLISH refused, a SUBSCRIBE or UNSUBSCRIBE answered) is forgotten.
func (h *idSpaces) OnPacketProcessed(cl *mqtt.Client, pk packets.Packet, _ error) {
	if !clientSpace(pk) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.moved[cl.ID][pk.PacketID]; ok && !cl.IsTakenOver() && !h.holds(cl, pk.PacketID) {
		h.forget(cl.ID, pk.PacketID)
	}
}

// OnSessionEstablish implements mqtt.Hook: a clean start discards the
// session (MQTT 5.0 Section 3.1.2.4), and with it the moved flows.
func (h *idSpaces) OnSessionEstablish(cl *mqtt.Client, pk packets.Packet) {
	if pk.Connect.Clean {
		h.drop(cl.ID)
	}
}

// OnDisconnect implements mqtt.Hook: a session that ends with its
// connection (mochi clears its table) loses its moved flows.
func (h *idSpaces) OnDisconnect(cl *mqtt.Client, _ error, expire bool) {
	if expire && !cl.IsTakenOver() {
		h.drop(cl.ID)
	}
}

// OnClientExpired implements mqtt.Hook.
func (h *idSpaces) OnClientExpired(cl *mqtt.Client) { h.drop(cl.ID) }

// inbound returns the internal identifier of a client's packet with
// identifier id: a PUBREL follows its PUBLISH (fresh false); a PUBLISH,
// SUBSCRIBE or UNSUBSCRIBE (fresh) is moved when the table holds id for
// something else than the client's own flow, which mochi would delete or
// overwrite (PUBLISH) or answer with 0x91, Packet Identifier in use
// (SUBSCRIBE, UNSUBSCRIBE).
func (h *idSpaces) inbound(cl *mqtt.Client, id uint16, fresh bool) uint16 {
	if cl.Net.Inline || cl.IsTakenOver() {
		return id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.moved[cl.ID]
	for in := range m {
		if !h.holds(cl, in) {
			h.forget(cl.ID, in) // acknowledged or dropped since
		}
	}
	m = h.moved[cl.ID]
	for in, orig := range m {
		if orig == id {
			return in // the flow's next packet, or its PUBLISH again (DUP)
		}
	}
	if !fresh {
		return id
	}
	if pk, ok := cl.State.Inflight.Get(id); !ok || clientAck(pk.FixedHeader.Type) && m[id] == 0 {
		return id // free, or this identifier's own QoS 2 flow
	}
	in := h.free(cl, m)
	if in == 0 {
		return id // every identifier in use: mochi's own handling
	}
	if m == nil {
		m = map[uint16]uint16{}
		h.moved[cl.ID] = m
	}
	m[in] = id
	return in
}

// holds reports whether the table of cl holds a client flow's entry under
// internal identifier in.
func (h *idSpaces) holds(cl *mqtt.Client, in uint16) bool {
	pk, ok := cl.State.Inflight.Get(in)
	return ok && clientAck(pk.FixedHeader.Type)
}

// free returns the highest identifier neither in the table nor moved to,
// or 0. mochi assigns its own identifiers upwards from 1
// (Client.NextPacketID), so the top of the range is the least likely to be
// taken by a delivery to the client while the moved PUBLISH is processed.
func (h *idSpaces) free(cl *mqtt.Client, m map[uint16]uint16) uint16 {
	for in := uint16(0xffff); in > 0; in-- {
		if _, ok := m[in]; ok {
			continue
		}
		if _, ok := cl.State.Inflight.Get(in); !ok {
			return in
		}
	}
	return 0
}

// forget removes one moved flow; h.mu is held.
func (h *idSpaces) forget(client string, in uint16) {
	delete(h.moved[client], in)
	if len(h.moved[client]) == 0 {
		delete(h.moved, client)
	}
}

func (h *idSpaces) drop(client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.moved, client)
}

// original returns the client's identifier of a moved flow.
func (h *idSpaces) original(client string, in uint16) (uint16, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.moved[client][in]
	return id, ok
}

// restore records a moved flow read back from the store.
func (h *idSpaces) restore(client string, in, id uint16) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.moved[client] == nil {
		h.moved[client] = map[uint16]uint16{}
	}
	h.moved[client][in] = id
}

// movedOrigin marks a stored acknowledgement of a moved flow: mochi's bolt
// hook keeps a packet's Origin (empty for an acknowledgement) with the
// in-flight entry, and boltHook puts the client's identifier there.
const movedOrigin = "torpor-client-packet-id:"

func movedTag(id uint16) string { return movedOrigin + strconv.FormatUint(uint64(id), 10) }

// movedFrom parses a tag written by movedTag.
func movedFrom(origin string) (uint16, bool) {
	s, ok := strings.CutPrefix(origin, movedOrigin)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 16)
	return uint16(n), err == nil && n != 0
}
