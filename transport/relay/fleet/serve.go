package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/clock"

	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// fence is a new link's announcement.
type fence struct {
	Since int64  `cbor:"1,keyasint"` // Unix ns, the holder's clock
	Relay string `cbor:"2,keyasint"`
}

// newer reports whether fence a is of a link newer than one this relay
// (id) holds since since: later, or at the same instant from a relay with
// a greater id.
func (a fence) newer(since int64, id string) bool {
	return a.Since > since || a.Since == since && a.Relay > id
}

// Linked implements relay.Peers: when this relay holds agent's link it
// answers on the agent's subjects, writes its presence key (with
// UsePresence) and tells the other relays to drop theirs; when the link
// is gone it stops answering and removes the key.
func (f *Fleet) Linked(agent string, up bool) {
	h := f.link(agent, up)
	if f.presence != nil {
		// Written after Linked returns: Linked comes between a link's
		// attach and its hello frame, which must come before any notice
		// on the link.
		f.queuePresence(agent)
	} else if h != nil {
		h.noticed = true
		go f.noticeLater(h.ctx, agent)
	}
	if h == nil {
		return
	}
	b, _ := cbor.Marshal(fence{Since: h.since, Relay: f.id})
	if err := f.nc.Publish(subject(agent, "fence"), b); err != nil {
		f.log.Warn("fleet: announcing a link", "agent", agent, "err", err)
	}
}

// link ends this relay's subscriptions for agent's link and, when up,
// makes new ones; it returns the new link (nil when !up).
func (f *Fleet) link(agent string, up bool) *held {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := f.held[agent]; h != nil {
		// Drained, not unsubscribed: a request the server routed here
		// before it took the unsubscription is still answered (a
		// forward: not-linked, and the sender's relay queues), where an
		// unsubscribed client drops it and the asker waits out its
		// whole timeout.
		for _, s := range h.subs {
			s.Drain()
		}
		h.stop()
		delete(f.held, agent)
	}
	if !up {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	h := &held{since: f.clk.Now().UnixNano(), ctx: ctx, stop: stop}
	handlers := map[string]nats.MsgHandler{
		"up":     func(m *nats.Msg) { m.Respond(nil) },
		"fwd":    func(m *nats.Msg) { go f.serveForward(agent, m) },
		"notify": func(m *nats.Msg) { f.serveNotify(agent, m) },
		"fence":  func(m *nats.Msg) { f.serveFence(agent, h, m) },
	}
	for op, fn := range handlers {
		s, err := f.nc.Subscribe(subject(agent, op), fn)
		if err != nil {
			f.log.Warn("fleet: subscribing", "agent", agent, "op", op, "err", err)
			continue
		}
		h.subs = append(h.subs, s)
	}
	f.held[agent] = h
	return h
}

// LinkedNoticeAfter is how long after a relay began to answer for a link
// (with UsePresence: after its presence key was stored) it tells the
// device, once, to pull its queue. A relay that asked the
// fleet about the link just before and found none stores a record without
// a notify when its publish came within relay.PeerNoticeGrace (shorter)
// of the question; that record is in the queue by the time this notice
// goes, and the device's pull finds it.
const LinkedNoticeAfter = 2 * time.Second

// noticeLater sends agent's device the notice of LinkedNoticeAfter unless
// ctx ends first (the link went). The wait is a network's, on the
// unscaled clock.
func (f *Fleet) noticeLater(ctx context.Context, agent string) {
	if clock.Sleep(ctx, clock.Unscaled(f.clk), LinkedNoticeAfter) != nil {
		return
	}
	if local := f.localLinks(); local != nil {
		local.Notify(agent, 0)
	}
}

func (f *Fleet) localLinks() Local {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.local
}

// serveForward forwards a request another relay took over the link this
// relay holds and answers with the device's answer.
func (f *Fleet) serveForward(agent string, m *nats.Msg) {
	var r reply
	var req wire.Request
	local := f.localLinks()
	switch {
	case local == nil:
		r.Err = "not-linked"
	case cbor.Unmarshal(m.Data, &req) != nil:
		r.Err, r.Message = "unanswered", "bad forwarded request"
	default:
		ctx, cancel := context.WithTimeout(context.Background(), LiveTimeout)
		resp, err := local.Forward(ctx, agent, req)
		cancel()
		var re *wire.RemoteError
		switch {
		case err == nil:
			r.Response = &resp
		case errors.Is(err, server.ErrNotLinked):
			r.Err = "not-linked"
		case errors.As(err, &re):
			r.Err, r.Code, r.Message = "remote", re.Code, re.Message
		default:
			r.Err, r.Message = "unanswered", err.Error()
		}
	}
	b, _ := cbor.Marshal(r)
	m.Respond(b)
}

func (f *Fleet) serveNotify(agent string, m *nats.Msg) {
	if local := f.localLinks(); local != nil && len(m.Data) == 8 {
		local.Notify(agent, binary.BigEndian.Uint64(m.Data))
	}
}

// serveFence drops this relay's link of agent when another relay
// announces a newer one; h is the link the subscription was made for,
// and a fence that reaches it after it ended (its subscription drains)
// is not this relay's business.
func (f *Fleet) serveFence(agent string, h *held, m *nats.Msg) {
	var a fence
	if h.ctx.Err() != nil || cbor.Unmarshal(m.Data, &a) != nil || a.Relay == f.id || !a.newer(h.since, f.id) {
		return
	}
	if local := f.localLinks(); local != nil && local.Drop(agent, "replaced by a newer link on another relay") {
		f.log.Info("fleet: link dropped, the device linked through another relay", "agent", agent)
	}
}
