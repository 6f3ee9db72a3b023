package mqtt

import (
	"errors"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

type evKind uint8

const (
	evMessage evKind = iota + 1
	evConnUp
	evConnDown
)

// event is what the dispatcher reacts to.
type event struct {
	kind    evKind
	msg     inbound       // evMessage
	nonce   string        // evConnUp: the probe this connection will publish
	flushed chan struct{} // evConnUp: closed once the backlog was handled
}

// inbound is one PUBLISH as paho delivered it, with the client (the
// connection) that must acknowledge it.
type inbound struct {
	pub *paho.Publish
	cli *paho.Client
}

// dispatch receives messages and connection events. Every command is first
// committed to the bbolt inbox and only then acknowledged to the broker, so
// the broker's flow control (a broker sends only so many unacknowledged
// messages) never stalls the backlog, and a crash loses nothing the broker
// was told is received. The backlog that arrives right after a connection
// is held until the end-of-backlog probe comes back (or BarrierTimeout
// passes) and handed to the Handler in the order it asks for
// (Handler.Order); from then on messages go to it as they arrive.
//
// The broker sends a resumed session's queued messages before anything
// published after the connection came up, so once the probe (published
// after the subscription) comes back, the backlog is complete, and a
// broker that redelivers it out of order (mochi sorts in-flight messages
// with an unstable sort) does not decide the order.
func (c *Client) dispatch(recovered []*Delivery) {
	defer c.wg.Done()
	b := &backlog{batch: recovered, collecting: true}
	defer b.stopTimer()
	var next *event // an event read while gathering messages
	for {
		var ev event
		if next != nil {
			ev, next = *next, nil
		} else {
			select {
			case <-c.ctx.Done():
				return
			case <-b.timeout:
				c.log.Warn("backlog probe did not come back; running the backlog as received", "commands", len(b.batch))
				c.runBacklog(b)
				continue
			case ev = <-c.events:
			}
		}
		next = c.dispatchEvent(b, ev)
	}
}

// backlog is the dispatcher's state: the messages held until the
// end-of-backlog probe comes back.
type backlog struct {
	batch      []*Delivery
	collecting bool
	nonce      string // the probe of the current connection
	timer      clock.Timer
	timeout    <-chan time.Time
	flushed    chan struct{} // closed once the backlog was handled
}

func (b *backlog) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer, b.timeout = nil, nil
	}
}

// dispatchEvent reacts to one event and returns the next one when it read
// it while gathering messages.
func (c *Client) dispatchEvent(b *backlog, ev event) *event {
	switch ev.kind {
	case evConnUp:
		b.stopTimer()
		b.nonce, b.collecting, b.flushed = ev.nonce, true, ev.flushed
		// A network round trip: on the unscaled clock, so that a
		// time-scaled demonstration does not cut it short.
		b.timer = clock.Unscaled(c.clock).NewTimer(c.cfg.Timing.BarrierTimeout)
		b.timeout = b.timer.C()
	case evConnDown:
		// The backlog stays stored; the next connection's probe decides
		// when it runs.
		b.stopTimer()
		b.collecting, b.nonce = true, ""
	case evMessage:
		if ev.msg.pub.Topic == c.topics.Sync() {
			ack(ev.msg)
			if b.collecting && b.nonce != "" && string(ev.msg.pub.Payload) == b.nonce {
				c.runBacklog(b)
			}
			return nil
		}
		msgs, next := c.gather(ev.msg)
		for _, d := range c.receive(msgs) {
			if b.collecting {
				b.batch = append(b.batch, d)
			} else {
				c.handle(d)
			}
		}
		return next
	}
	return nil
}

// runBacklog hands the held backlog to the handler in the order it asks
// for (Handler.Order); from then on messages run as they arrive.
func (c *Client) runBacklog(b *backlog) {
	b.stopTimer()
	for _, d := range c.cfg.Handler.Order(b.batch) {
		c.handle(d)
	}
	b.batch, b.collecting = nil, false
	if b.flushed != nil {
		close(b.flushed)
		b.flushed = nil
	}
}

// gather returns first and the command messages queued behind it (up to
// 64), so that one transaction stores them all, and the first other event
// it read, if any.
func (c *Client) gather(first inbound) ([]inbound, *event) {
	msgs := []inbound{first}
	for len(msgs) < 64 {
		select {
		case ev := <-c.events:
			if ev.kind != evMessage || ev.msg.pub.Topic == c.topics.Sync() {
				return msgs, &ev
			}
			msgs = append(msgs, ev.msg)
		default:
			return msgs, nil
		}
	}
	return msgs, nil
}

// receive stores messages in the inbox, acknowledges them, and returns them
// parsed. When they cannot be stored they are not acknowledged: the broker
// keeps them and delivers them again.
func (c *Client) receive(msgs []inbound) []*Delivery {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil // not acknowledged: delivered again at the next wake
	}
	if msgs = c.dropRefused(msgs); len(msgs) == 0 {
		return nil
	}
	st := make([]stored, len(msgs))
	now := c.clock.Now().UTC()
	for i, in := range msgs {
		st[i] = stored{Payload: in.pub.Payload, At: now}
		if pr := in.pub.Properties; pr != nil {
			st[i].ContentType, st[i].Correlation = pr.ContentType, pr.CorrelationData
		}
	}
	entries, err := c.storeInbox(st)
	if err != nil {
		c.log.Warn("commands not stored; the broker keeps them", "commands", len(msgs), "err", err)
		return nil
	}
	out := make([]*Delivery, len(entries))
	for i, e := range entries {
		ack(msgs[i])
		out[i] = c.parseEntry(e)
	}
	return out
}

// dropRefused acknowledges and discards, before anything is written to
// flash, the messages whose payload exceeds envelope.MaxPayload and those
// delivered as retained. An oversized command could never be read, and
// storing it would let anyone who may publish on the command topic fill
// the device's store; the broker was told the limit (login.MaxPacketSize
// in CONNECT) and should never send one. Commands are never retained
// (Topics): a retained one is handed to the device again at every new
// subscription, so whoever could publish it once (an operator's slip, a
// broker whose ACL cannot refuse the retain flag, as mosquitto's cannot)
// would have it arrive at every wake.
func (c *Client) dropRefused(msgs []inbound) []inbound {
	kept := msgs[:0:0]
	for _, in := range msgs {
		switch {
		case len(in.pub.Payload) > envelope.MaxPayload:
			c.log.Warn("command dropped unstored: payload too large", "bytes", len(in.pub.Payload), "max", envelope.MaxPayload)
		case in.pub.Retain:
			c.log.Warn("command dropped unstored: it was retained; commands are never retained (clear it: publish an empty retained message on the topic)",
				"topic", in.pub.Topic, "bytes", len(in.pub.Payload))
		default:
			kept = append(kept, in)
			continue
		}
		ack(in)
	}
	return kept
}

// parseEntry decodes a stored command (content type, then Governed Object
// structure, check 1 of draft Section 8.1).
func (c *Client) parseEntry(e inboxEntry) *Delivery {
	d := &Delivery{c: c, entry: e.key, Correlation: e.msg.Correlation}
	ct := e.msg.ContentType
	asCBOR, err := envelope.IsCBOR(ct)
	if err != nil {
		d.Err = &Unreadable{envelope.ReasonUnsupportedContentType, err.Error()}
		return d
	}
	d.CBOR = asCBOR
	j, err := envelope.DecodePayload(ct, e.msg.Payload)
	if err != nil {
		d.Err = &Unreadable{governed.ReasonMalformed.String(), err.Error()}
		return d
	}
	o, err := governed.Parse(j)
	if err != nil {
		var re *governed.RejectError
		errors.As(err, &re)
		d.Err = &Unreadable{governed.ReasonMalformed.String(), re.Detail}
		return d
	}
	d.Object = o
	return d
}

// handle hands one stored message to the handler.
func (c *Client) handle(d *Delivery) {
	c.mu.Lock()
	if c.closing {
		// Stored: it runs at the next start.
		c.mu.Unlock()
		return
	}
	c.beginLocked()
	d.Key = c.key
	c.mu.Unlock()
	c.cfg.Handler.Handle(c.ctx, d)
}

// ack acknowledges a message on the connection that delivered it. After a
// reconnect the old connection's acknowledgement is lost and the broker
// delivers the message again; it is stored again, and the handler
// reports it as a replay and does not run it twice.
func ack(in inbound) {
	if in.cli != nil {
		in.cli.Ack(in.pub)
	}
}
