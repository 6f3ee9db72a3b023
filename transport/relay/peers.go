package relay

import (
	"context"
	"errors"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Peers reaches the device links that other relays of a fleet hold, so
// that a request taken by one relay reaches a device linked to another
// (transport/relay/fleet implements it over NATS). A relay asks Peers
// only about agents it holds no link for.
type Peers interface {
	// Up reports whether another relay holds agent's link. A question it
	// asks over the network it bounds itself (fleet.UpTimeout): no answer
	// in time means no relay holds the link.
	Up(ctx context.Context, agent string) bool
	// Forward sends req to the relay that holds agent's link, which
	// forwards it over the link. Its errors are server.Forward's:
	// server.ErrNotLinked when no relay took the request (the device did
	// not get it), server.ErrUnanswered when the device may have.
	Forward(ctx context.Context, agent string, req wire.Request) (wire.Response, error)
	// Notify tells the relay that holds agent's link that record seq was
	// queued.
	Notify(agent string, seq uint64)
	// Linked says that this relay now holds (up) or no longer holds
	// agent's link; the other relays drop theirs when it is up.
	Linked(agent string, up bool)
}

// linkAsked is what the relay found when it asked whether agent's device
// was linked, and when it began to ask (on the unscaled clock: the
// interval is a network's, measured against the fleet's).
type linkAsked struct {
	up    bool
	asked time.Time
}

// askLink is linkUp, remembered for notifyLink.
func (s *Relay) askLink(ctx context.Context, agent string) linkAsked {
	asked := clock.Unscaled(s.clk).Now()
	return linkAsked{up: s.linkUp(ctx, agent), asked: asked}
}

// linkUp reports whether agent's device is linked to this relay or,
// with Peers, to another of the fleet.
func (s *Relay) linkUp(ctx context.Context, agent string) bool {
	if s.link.Up(agent) {
		return true
	}
	if s.cfg.Peers == nil {
		return false
	}
	return s.cfg.Peers.Up(ctx, agent)
}

// forwardLink forwards req over agent's link on this relay or, with
// Peers, on the relay of the fleet that holds it.
func (s *Relay) forwardLink(ctx context.Context, agent string, req wire.Request) (wire.Response, error) {
	resp, err := s.link.Forward(ctx, agent, req)
	if errors.Is(err, server.ErrNotLinked) && s.cfg.Peers != nil && !s.link.Up(agent) {
		return s.cfg.Peers.Forward(ctx, agent, req)
	}
	return resp, err
}

// PeerNoticeGrace is how long after the fleet said that no relay held an
// agent's link a relay may store a record for it without announcing it to
// the fleet. A relay that takes a link announces the queue to the device
// once more fleet.LinkedNoticeAfter (longer) after it began to answer for
// the link: a device that linked elsewhere after the question, and
// drained before the record was stored, learns of it then
// (docs/scale-out.md, "Links across relays").
const PeerNoticeGrace = time.Second

// notifyLink tells agent's linked device, here or on another relay, that
// seq was queued. With Peers it sends nothing when the fleet had just said
// that no relay held the link (l, within PeerNoticeGrace): nobody would
// get the notice.
func (s *Relay) notifyLink(agent string, seq uint64, l linkAsked) {
	if s.link.Up(agent) || s.cfg.Peers == nil {
		s.link.Notify(agent, seq)
		return
	}
	if !l.up && clock.Since(clock.Unscaled(s.clk), l.asked) <= PeerNoticeGrace {
		return
	}
	s.cfg.Peers.Notify(agent, seq)
}
