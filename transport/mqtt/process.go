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

// parsed is a command message decoded as far as possible before admission.
type parsed struct {
	in   inbound
	cbor bool
	obj  *governed.Object // nil when the payload did not decode or parse
	rej  *rejection       // why, when obj is nil
	seq  uint64           // the claimed sequence number, for ordering only
}

// job is an admitted command waiting to run.
type job struct {
	in   inbound
	cmd  Command
	key  *did.PrivateKey // signs the reply: the identity at admission
	cbor bool
}

// dispatch receives messages and connection events, holds the backlog that
// arrives right after a connection until the end-of-backlog probe comes
// back (or BarrierTimeout passes), runs it in sequence order, and from
// then on handles commands as they arrive.
//
// The broker sends a resumed session's queued messages before anything
// published after the connection came up, so once the probe (published
// after the subscription) comes back, the backlog is complete. Sorting it
// by sequence means a broker that redelivers out of order (mochi's
// unstable sort of in-flight messages, PLATFORM.md §3) does not change
// which commands run or in what order; the sequence rule (admit) covers
// what arrives later.
func (c *Client) dispatch() {
	defer c.wg.Done()
	var (
		batch      []parsed
		collecting = true
		nonce      string
		timer      clock.Timer
		timeout    <-chan time.Time
		flushed    chan struct{}
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
		select {
		case <-c.ctx.Done():
			stopTimer()
			return
		case <-timeout:
			c.log.Warn("backlog probe did not come back; running the backlog as received", "commands", len(batch))
			flush()
		case ev := <-c.events:
			switch ev.kind {
			case evConnUp:
				stopTimer()
				nonce, collecting, flushed = ev.nonce, true, ev.flushed
				timer = c.clock.NewTimer(c.cfg.BarrierTimeout)
				timeout = timer.C()
			case evConnDown:
				// Unacknowledged messages come again on the next
				// connection; what was collected from this one is dropped.
				stopTimer()
				batch, collecting, nonce = nil, true, ""
			case evMessage:
				if ev.msg.pub.Topic == c.topics.Sync() {
					ack(ev.msg)
					if collecting && nonce != "" && string(ev.msg.pub.Payload) == nonce {
						flush()
					}
					continue
				}
				p := c.parse(ev.msg)
				if collecting {
					batch = append(batch, p)
				} else {
					c.handle(p)
				}
			}
		}
	}
}

// parse decodes a command message (content type, then Governed Object
// structure, check 1 of draft Section 8.1).
func (c *Client) parse(in inbound) parsed {
	p := parsed{in: in}
	var ct string
	if in.pub.Properties != nil {
		ct = in.pub.Properties.ContentType
	}
	asCBOR, err := isCBOR(ct)
	if err != nil {
		p.rej = reject(ReasonUnsupportedContentType, "%v", err)
		return p
	}
	p.cbor = asCBOR
	j, err := decodePayload(ct, in.pub.Payload)
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
		// Not acknowledged: the broker delivers it again at the next
		// connection.
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
	cmd, err := c.adm.admit(key.DID(), p.obj)
	var r *rejection
	switch {
	case errors.As(err, &r):
		c.rejected(p, r, key)
		return
	case err != nil:
		// The store failed: leave the message unacknowledged so the broker
		// delivers it again, and tell the operators.
		c.log.Error("admitting a command failed", "err", err)
		c.end()
		return
	}
	c.mu.Lock()
	c.stats.Accepted++
	c.mu.Unlock()
	j := job{in: p.in, cmd: cmd, key: key, cbor: p.cbor}
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
// acknowledges it.
func (c *Client) rejected(p parsed, r *rejection, key *did.PrivateKey) {
	c.mu.Lock()
	c.stats.Rejected[r.reason]++
	c.mu.Unlock()
	c.log.Info("command refused", "outcome", r.outcome, "reason", r.reason, "detail", r.detail)
	if !c.limiter.allow() {
		c.mu.Lock()
		c.stats.Suppressed++
		c.mu.Unlock()
		ack(p.in)
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
	} else if corr := p.in.pub.Properties; corr != nil && utf8.Valid(corr.CorrelationData) && len(corr.CorrelationData) <= maxIDLen {
		reply.Command = string(corr.CorrelationData)
	}
	go func() {
		defer c.end()
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer cancel()
		if err := c.answerRejection(ctx, reply, key, p.cbor); err != nil {
			c.log.Warn("answering a refused command failed", "err", err)
		}
		ack(p.in)
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
// ledger together with its reply in the outbound queue (one transaction:
// after a power cut either both are there or the key is still reserved
// and so indeterminate), and only then acknowledges the command.
func (c *Client) run(j job) {
	defer c.end()
	res := c.cfg.Device.Execute(c.ctx, j.cmd)
	if c.isAborted() {
		// As after a power cut: nothing more is recorded; the ledger key
		// stays reserved and reads indeterminate after the restart.
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
		return c.queue.EnqueueTx(tx, pkt)
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
	ack(j.in)
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
// delivers the message again; admit then reports it as a replay and does
// not run it twice.
func ack(in inbound) {
	if in.cli != nil {
		in.cli.Ack(in.pub)
	}
}
