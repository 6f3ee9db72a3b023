package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/eclipse/paho.golang/paho"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
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

// parsed is a stored command decoded as far as possible before admission.
type parsed struct {
	entry inboxEntry
	cbor  bool
	obj   *governed.Object // nil when the payload did not decode or parse
	rej   *rejection       // why, when obj is nil
	seq   uint64           // the claimed sequence number, for ordering only
}

// job is an admitted command waiting to run.
type job struct {
	entry uint64 // inbox key
	cmd   Command
	key   *did.PrivateKey // signs the reply: the identity at admission
	cbor  bool
}

// dispatch receives messages and connection events. Every command is first
// committed to the bbolt inbox and only then acknowledged to the broker, so
// the broker's flow control (a broker sends only so many unacknowledged
// messages) never stalls the backlog, and a crash loses nothing the broker
// was told is received. The backlog that arrives right after a connection
// is held until the end-of-backlog probe comes back (or BarrierTimeout
// passes) and run in sequence order; from then on commands run as they
// arrive.
//
// The broker sends a resumed session's queued messages before anything
// published after the connection came up, so once the probe (published
// after the subscription) comes back, the backlog is complete. Sorting it
// by sequence means a broker that redelivers out of order (mochi's
// unstable sort of in-flight messages; see this package's doc) does not change
// which commands run or in what order; the sequence rule (admit) covers
// what arrives later.
func (c *Client) dispatch(recovered []parsed) {
	defer c.wg.Done()
	var (
		batch      = recovered
		collecting = true
		nonce      string
		timer      clock.Timer
		timeout    <-chan time.Time
		flushed    chan struct{}
		next       *event // an event read while gathering messages
	)
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, timeout = nil, nil
		}
	}
	flush := func() {
		stopTimer()
		for _, p := range orderBatch(batch) {
			c.handle(p)
		}
		batch, collecting = nil, false
		if flushed != nil {
			close(flushed)
			flushed = nil
		}
	}
	for {
		var ev event
		if next != nil {
			ev, next = *next, nil
		} else {
			select {
			case <-c.ctx.Done():
				stopTimer()
				return
			case <-timeout:
				c.log.Warn("backlog probe did not come back; running the backlog as received", "commands", len(batch))
				flush()
				continue
			case ev = <-c.events:
			}
		}
		switch ev.kind {
		case evConnUp:
			stopTimer()
			nonce, collecting, flushed = ev.nonce, true, ev.flushed
			// A network round trip: on the unscaled clock, so that a
			// time-scaled demonstration does not cut it short.
			timer = clock.Unscaled(c.clock).NewTimer(c.cfg.BarrierTimeout)
			timeout = timer.C()
		case evConnDown:
			// The backlog stays stored; the next connection's probe
			// decides when it runs.
			stopTimer()
			collecting, nonce = true, ""
		case evMessage:
			if ev.msg.pub.Topic == c.topics.Sync() {
				ack(ev.msg)
				if collecting && nonce != "" && string(ev.msg.pub.Payload) == nonce {
					flush()
				}
				continue
			}
			var msgs []inbound
			msgs, next = c.gather(ev.msg)
			for _, p := range c.receive(msgs) {
				if collecting {
					batch = append(batch, p)
				} else {
					c.handle(p)
				}
			}
		}
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
func (c *Client) receive(msgs []inbound) []parsed {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil // not acknowledged: delivered again at the next wake
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
	out := make([]parsed, len(entries))
	for i, e := range entries {
		ack(msgs[i])
		out[i] = parseEntry(e)
	}
	return out
}

// parseEntry decodes a stored command (content type, then Governed Object
// structure, check 1 of draft Section 8.1).
func parseEntry(e inboxEntry) parsed {
	p := parsed{entry: e}
	ct := e.msg.ContentType
	asCBOR, err := isCBOR(ct)
	if err != nil {
		p.rej = reject(ReasonUnsupportedContentType, "%v", err)
		return p
	}
	p.cbor = asCBOR
	j, err := decodePayload(ct, e.msg.Payload)
	if err != nil {
		p.rej = reject(governed.ReasonMalformed.String(), "%v", err)
		return p
	}
	o, err := governed.Parse(j)
	if err != nil {
		var re *governed.RejectError
		errors.As(err, &re)
		p.rej = reject(governed.ReasonMalformed.String(), "%s", re.Detail)
		return p
	}
	p.obj = o
	var claim struct {
		Seq uint64 `json:"seq"`
	}
	json.Unmarshal(o.Payload, &claim)
	p.seq = claim.Seq
	return p
}

// orderBatch orders a backlog: undecodable messages first, then each
// operator's commands by their (claimed) sequence number, the operators
// interleaved by issuance time. Claims are unverified here; they only
// decide the order in which admit checks them.
func orderBatch(b []parsed) []parsed {
	var out []parsed
	groups := map[string][]parsed{}
	var issuers []string
	for _, p := range b {
		if p.obj == nil {
			out = append(out, p)
			continue
		}
		k := p.obj.Issuer.String()
		if _, ok := groups[k]; !ok {
			issuers = append(issuers, k)
		}
		groups[k] = append(groups[k], p)
	}
	for _, k := range issuers {
		slices.SortStableFunc(groups[k], func(a, b parsed) int {
			switch {
			case a.seq < b.seq:
				return -1
			case a.seq > b.seq:
				return 1
			}
			return 0
		})
	}
	for {
		best := -1
		for i, k := range issuers {
			g := groups[k]
			if len(g) > 0 && (best < 0 || g[0].obj.IssuedAt.Before(groups[issuers[best]][0].obj.IssuedAt)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		k := issuers[best]
		out = append(out, groups[k][0])
		groups[k] = groups[k][1:]
	}
}

// handle admits one command and hands it to the executor, or answers its
// rejection.
func (c *Client) handle(p parsed) {
	c.mu.Lock()
	if c.closing {
		// Stored: it runs at the next start.
		c.mu.Unlock()
		return
	}
	c.beginLocked()
	key := c.key
	c.mu.Unlock()
	if p.rej != nil {
		c.rejected(p, p.rej, key)
		return
	}
	cmd, err := c.adm.admit(key.DID(), p.obj, func(tx *bolt.Tx, cmd Command) error {
		return markAdmitted(tx, p.entry.key, cmd, p.cbor)
	})
	var r *rejection
	switch {
	case errors.As(err, &r):
		c.rejected(p, r, key)
		return
	case err != nil:
		// The store failed: the command stays in the inbox and runs at
		// the next start.
		c.log.Error("admitting a command failed", "err", err)
		c.end()
		return
	}
	c.mu.Lock()
	c.stats.Accepted++
	c.mu.Unlock()
	j := job{entry: p.entry.key, cmd: cmd, key: key, cbor: p.cbor}
	if cmd.Op == OpHalt {
		go c.run(j) // a halt must reach work in flight; it does not queue behind it
		return
	}
	select {
	case c.jobs <- j:
	case <-c.ctx.Done():
		c.end()
	}
}

// rejected answers a refused command on the reply topic (or, when it has no
// id to answer to, on the event topic), within the rejection rate, and
// removes it from the inbox.
func (c *Client) rejected(p parsed, r *rejection, key *did.PrivateKey) {
	c.mu.Lock()
	c.stats.Rejected[r.reason]++
	c.mu.Unlock()
	c.log.Info("command refused", "outcome", r.outcome, "reason", r.reason, "detail", r.detail)
	forget := func() {
		if err := c.cfg.DB.Update(func(tx *bolt.Tx) error { return deleteInbox(tx, p.entry.key) }); err != nil {
			c.log.Error("removing a refused command from the inbox", "err", err)
		}
	}
	if !c.limiter.allow() {
		c.mu.Lock()
		c.stats.Suppressed++
		c.mu.Unlock()
		forget()
		c.end()
		return
	}
	reply := Reply{Device: key.DID().String(), Outcome: r.outcome, Reason: r.reason, Detail: r.detail}
	if p.obj != nil {
		reply.Command = p.obj.ID
		if verified(r.reason) {
			reply.Operator = p.obj.Issuer.String()
			reply.Seq = p.seq
		}
	} else if corr := p.entry.msg.Correlation; utf8.Valid(corr) && len(corr) <= maxIDLen {
		reply.Command = string(corr)
	}
	go func() {
		defer c.end()
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer cancel()
		if err := c.answerRejection(ctx, reply, key, p.cbor); err != nil {
			c.log.Warn("answering a refused command failed", "err", err)
		}
		forget()
	}()
}

// verified reports whether a rejection came after the signature check
// passed, so that the issuer named in the object is authentic.
func verified(reason string) bool {
	switch reason {
	case governed.ReasonMalformed.String(), governed.ReasonSignatureInvalid.String(),
		governed.ReasonSignatureNotByIssuer.String(), ReasonUnsupportedContentType:
		return false
	}
	return true
}

func (c *Client) answerRejection(ctx context.Context, r Reply, key *did.PrivateKey, asCBOR bool) error {
	if r.Command == "" {
		return c.PublishEvent(ctx, Event{Kind: "command-rejected", Detail: r.Reason + ": " + r.Detail})
	}
	o, err := signReply(key, c.clock.Now(), r)
	if err != nil {
		return err
	}
	j, _ := o.MarshalJSON()
	payload, err := encodePayload(j, asCBOR)
	if err != nil {
		return err
	}
	exp := uint32(DefaultReplyTTL / time.Second)
	_, err = c.cm.Publish(ctx, &paho.Publish{Topic: c.topics.Reply(), QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: contentType(asCBOR), CorrelationData: []byte(r.Command), MessageExpiry: &exp}})
	return err
}

// executeLoop runs admitted commands one at a time, in admission order.
func (c *Client) executeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case j := <-c.jobs:
			c.run(j)
		}
	}
}

// run executes one admitted command, then commits its completion in the
// ledger, its reply in the outbound queue and its removal from the inbox
// in one transaction: after a power cut either all three are there, or the
// ledger key is still reserved (so indeterminate) and the inbox entry,
// marked admitted, makes the next start answer "indeterminate".
func (c *Client) run(j job) {
	defer c.end()
	res := c.cfg.Device.Execute(c.ctx, j.cmd)
	if c.isAborted() {
		// As after a power cut: nothing more is recorded.
		return
	}
	reply := c.replyFor(j, res)
	o, err := signReply(j.key, c.clock.Now(), reply)
	if err != nil {
		c.log.Error("signing a reply failed", "command", j.cmd.ID, "err", err)
		return
	}
	objJSON, _ := o.MarshalJSON()
	payload, err := encodePayload(objJSON, j.cbor)
	if err != nil {
		c.log.Error("encoding a reply failed", "command", j.cmd.ID, "err", err)
		return
	}
	pkt := publishPacket(c.topics.Reply(), payload, contentType(j.cbor), []byte(j.cmd.ID), DefaultReplyTTL)
	err = c.cfg.DB.Update(func(tx *bolt.Tx) error {
		if err := c.cfg.Ledger.Complete(tx, j.cmd.Key, objJSON, ""); err != nil {
			return err
		}
		if err := c.queue.EnqueueTx(tx, pkt); err != nil {
			return err
		}
		return deleteInbox(tx, j.entry)
	})
	if err != nil {
		// The key stays reserved (indeterminate after a restart); the
		// operator still gets the answer if the connection is up.
		c.log.Error("recording a command's completion failed", "command", j.cmd.ID, "err", err)
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		c.cm.Publish(ctx, &paho.Publish{Topic: c.topics.Reply(), QoS: 1, Payload: payload,
			Properties: &paho.PublishProperties{ContentType: contentType(j.cbor), CorrelationData: []byte(j.cmd.ID)}})
		cancel()
	}
	c.log.Info("command executed", "op", j.cmd.Op, "id", j.cmd.ID, "operator", j.cmd.Operator.String(), "outcome", reply.Outcome, "reason", reply.Reason)
	c.kickStatus()
	if res.After != nil {
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		if err := c.flush(ctx); err != nil {
			c.log.Warn("reply not acknowledged before the command's follow-up", "command", j.cmd.ID, "err", err)
		}
		cancel()
		res.After()
	}
}

// replyFor builds the reply to an executed command.
func (c *Client) replyFor(j job, res Result) Reply {
	r := Reply{Device: j.key.DID().String(), Command: j.cmd.ID, Operator: j.cmd.Operator.String(),
		Seq: j.cmd.Seq, Op: j.cmd.Op, Outcome: res.Outcome, Reason: res.Reason, Detail: res.Detail}
	if r.Outcome != OutcomeOK && r.Outcome != OutcomeFailed {
		r.Outcome, r.Reason, r.Detail = OutcomeFailed, "device-error", "the device reported outcome "+truncate(string(res.Outcome))
	}
	if res.Data != nil {
		b, err := json.Marshal(res.Data)
		if err != nil {
			r.Outcome, r.Reason, r.Detail = OutcomeFailed, "device-error", "encoding the result: "+err.Error()
		} else {
			r.Result = b
		}
	}
	return r
}

// ack acknowledges a message on the connection that delivered it. After a
// reconnect the old connection's acknowledgement is lost and the broker
// delivers the message again; it is stored again, and admit reports it as
// a replay and does not run it twice.
func ack(in inbound) {
	if in.cli != nil {
		in.cli.Ack(in.pub)
	}
}
