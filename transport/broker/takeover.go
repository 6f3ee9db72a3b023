package broker

import (
	"bytes"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// takeovers keeps a message that reaches a persistent session while a new
// connection takes that session over (docs/mqtt.md, mochi's defect 2).
//
// A device reconnects at every wake, and mochi v2.7.9 then takes its
// session over from the client of the last connection
// (Server.inheritClientSession): it marks the old client taken over,
// clones its in-flight table into the new client, clears the old table,
// and only then puts the new client in its client list. A publication fanned
// out meanwhile (Server.publishToSubscribers finds the old client in the
// list) is stored in the old client's table after the clone: it is never
// sent, and the operator who got the PUBACK waits for an answer that never
// comes. MQTT 5.0 Section 4.1 makes the session, not the connection, hold a
// QoS 1 or 2 message until it is acknowledged.
//
// The hook moves such a message to the session's new client: a QoS
// PUBLISH stored (OnQosPublish) in a client already taken over, when the
// session was resumed rather than discarded (a clean start, MQTT 5.0
// Section 3.1.2.4), is deleted from the old table, given an identifier of
// the new client and stored in its table and in the bolt store (store).
// Before the new connection has resent its in-flight table it goes with
// that resend, or is written once the session is established; after, it is
// written at once. A message stored in the old client between the mark and
// the clone is cloned and moved both: it reaches the device twice, which
// QoS 1 allows (MQTT 5.0 Section 4.3.2) and the device's replay cache
// absorbs; none is lost.
type takeovers struct {
	mqtt.HookBase
	srv   *mqtt.Server
	store func(cl *mqtt.Client, pk packets.Packet) // nil without a bolt store

	mu sync.Mutex
	// of maps a client id to the last takeover of its session.
	of map[string]*takeover
}

// takeover is one connection taking a session over from another client.
type takeover struct {
	old, new    *mqtt.Client
	discarded   bool     // a clean start: the old session's messages go with it
	established bool     // the new connection resent its in-flight table
	late        []uint16 // moved before established, by their new identifiers
}

func newTakeovers(srv *mqtt.Server) *takeovers {
	return &takeovers{srv: srv, of: map[string]*takeover{}}
}

// ID implements mqtt.Hook.
func (h *takeovers) ID() string { return "torpor-session-takeover" }

// Provides implements mqtt.Hook.
func (h *takeovers) Provides(b byte) bool {
	return bytes.IndexByte([]byte{mqtt.OnSessionEstablish, mqtt.OnSessionEstablished, mqtt.OnQosPublish, mqtt.OnClientExpired}, b) >= 0
}

// OnSessionEstablish implements mqtt.Hook: it notes the client whose
// session cl is about to take over (mochi calls it before
// inheritClientSession).
func (h *takeovers) OnSessionEstablish(cl *mqtt.Client, pk packets.Packet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.srv.Clients.Get(cl.ID)
	if !ok || old == cl || cl.Net.Inline {
		delete(h.of, cl.ID)
		return
	}
	// The condition of mochi's inheritClientSession ([MQTT-3.1.2-4]).
	discarded := pk.Connect.Clean || (old.Properties.Clean && old.Properties.ProtocolVersion < 5)
	h.of[cl.ID] = &takeover{old: old, new: cl, discarded: discarded}
}

// OnSessionEstablished implements mqtt.Hook: mochi resent the new client's
// in-flight table before calling it; the messages moved meanwhile may have
// missed that resend and are written now.
func (h *takeovers) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	h.mu.Lock()
	t := h.of[cl.ID]
	if t == nil || t.new != cl {
		h.mu.Unlock()
		return
	}
	t.established = true
	late := t.late
	t.late = nil
	h.mu.Unlock()
	for _, id := range late {
		if pk, ok := cl.State.Inflight.Get(id); ok {
			pk.FixedHeader.Dup = true // [MQTT-3.3.1-1]: it may have gone with the resend
			_ = cl.WritePacket(pk)    // a closed connection keeps it in the table for the next
		}
	}
}

// OnQosPublish implements mqtt.Hook: a message stored in a client whose
// session was taken over moves to the new client.
func (h *takeovers) OnQosPublish(cl *mqtt.Client, pk packets.Packet, _ int64, _ int) {
	if pk.FixedHeader.Type != packets.Publish || !cl.IsTakenOver() {
		return
	}
	h.mu.Lock()
	t := h.of[cl.ID]
	if t == nil || t.old != cl || t.discarded {
		h.mu.Unlock()
		return
	}
	id, err := t.new.NextPacketID()
	if err != nil {
		h.mu.Unlock()
		h.srv.Log.Warn("a message for a session taken over found no packet identifier", "client", cl.ID, "error", err)
		return
	}
	out := pk.Copy(false)
	out.PacketID = uint16(id)
	// A topic alias is the old connection's (MQTT 5.0 Section 3.3.2.3.4).
	out.Properties.TopicAlias, out.Properties.TopicAliasFlag = 0, false
	if out.TopicName == "" {
		h.mu.Unlock()
		h.srv.Log.Warn("a message for a session taken over came by topic alias only; not moved", "client", cl.ID)
		return
	}
	cl.State.Inflight.Delete(pk.PacketID)
	t.new.State.Inflight.Set(out)
	established := t.established
	if !established {
		t.late = append(t.late, out.PacketID)
	}
	h.mu.Unlock()
	if h.store != nil {
		h.store(t.new, out)
	}
	if established {
		_ = t.new.WritePacket(out)
	}
}

// OnClientExpired implements mqtt.Hook.
func (h *takeovers) OnClientExpired(cl *mqtt.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.of[cl.ID]; t != nil && t.new == cl {
		delete(h.of, cl.ID)
	}
}
