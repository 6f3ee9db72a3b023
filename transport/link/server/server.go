package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/bearer/bearerhttp"
	"github.com/torpor-dev/torpor/transport/link/internal/calls"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Errors of Forward, and why a link closed.
var (
	// ErrNotLinked is returned by Server.Forward when the agent has no link.
	ErrNotLinked = errors.New("link: agent not linked")
	// ErrUnanswered is returned by Server.Forward when the link dropped (or
	// the context ended) after the request was sent and before its answer
	// came: the device may or may not have processed it.
	ErrUnanswered = errors.New("link: request sent but not answered")
	// ErrClosed is why a link closed when the device or the relay closed
	// it.
	ErrClosed = errors.New("link: closed")
	// errStopping ends the links of a relay that stops (Close).
	errStopping = fmt.Errorf("%w: the relay is stopping", ErrClosed)
)

// CodeNotDelivered is the error frame code of an ack that names a record
// not delivered on its link; the relay deletes nothing of that ack.
const CodeNotDelivered = "ack-not-delivered"

// Queue is the part of the relay's queue store the link drains.
type Queue interface {
	Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error)
	Ack(ctx context.Context, agent string, seqs []uint64) error
}

// Refusal is an Admit error answered with its own status and error code
// (other errors: 403 agent_not_admitted), such as a cap the relay has
// reached.
type Refusal struct {
	Status        int
	Code, Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Agents is the relay's per-agent state as the link sees it.
type Agents interface {
	// Admit decides whether agent may link and returns the ceiling bounds
	// announced in the hello frame. An error refuses the link (403, or a
	// *Refusal's status).
	Admit(ctx context.Context, agent did.DID) (queuebounds.Bounds, error)
	// Publish stores a state the device published and returns the bounds
	// now in force and the KeyPackages held for the agent. An error is sent
	// back to the device as an error frame (its message should say what
	// was wrong) and changes nothing.
	Publish(ctx context.Context, agent did.DID, st wire.State) (wire.Accepted, error)
	// Linked is told when an agent's link comes up and goes down.
	Linked(agent did.DID, up bool)
}

// Server is the relay side of the device link: an http.Handler for wire.Path
// plus Forward for live requests. The zero value is not usable; set
// Verifier, Queue and Agents.
type Server struct {
	// Verifier checks the device's DID Bearer token on the upgrade request;
	// its Audience is the relay's public origin. The server uses a copy
	// whose Purpose is bearer.PurposeLink, whatever Verifier's is.
	Verifier *bearer.Verifier
	Queue    Queue
	Agents   Agents
	// Clock drives pings and the time records are read at; nil is the
	// real clock.
	Clock clock.Clock
	// Updates is the relay's update repository devices fetch with update
	// frames (store/updaterepo); nil answers them CodeNoUpdates.
	Updates Updates
	// Logger receives link up/down and protocol errors; nil discards.
	Logger *slog.Logger
	// OnAcked, if set, is called with how long each acknowledged record
	// waited between enqueue and acknowledgement (drain latency).
	OnAcked func(agent did.DID, waited []time.Duration)
	// OnUnacked, if set, is called when a link ends with how many of the
	// records it delivered each sender DID has left unacknowledged: the
	// records the device deferred (or had not acknowledged yet when the
	// link dropped). A link that leaves none reports an empty map.
	OnUnacked func(agent did.DID, bySender map[string]int)
	// Rand is the randomness of handshake nonces; nil is crypto/rand.
	Rand io.Reader
	// MaxSpentTokens bounds how many accepted link tokens the server
	// remembers at once, each until it expires (at most
	// bearer.DefaultMaxLifetime); zero means DefaultMaxSpentTokens. When
	// that many unexpired ones are held, links are refused (503) until
	// some expire: refusing is safe, forgetting one would let it be
	// replayed.
	MaxSpentTokens int
	// Spent remembers the link tokens accepted, each until its expiry
	// plus the clock skew the verifier allows: a relay of a fleet passes
	// the fleet's (store/shared; on JetStream a token spent at one relay
	// is refused at every other). Nil means the server's own, in memory
	// (MaxSpentTokens at most): a token spent before a restart can be
	// presented once more after it, and then still needs the device key
	// (docs/security.md).
	Spent shared.Spent

	mu sync.Mutex
	// mu guards all following fields.
	conns map[string]*serverConn
}

type serverConn struct {
	s     *Server
	agent did.DID
	ws    *websocket.Conn
	ctx   context.Context
	stop  context.CancelFunc

	calls calls.Table
	gone  chan struct{} // closed when the conn stops being its agent's link
	// hello is closed once the hello frame was written (or could not
	// be): no other frame goes out before it (Notify waits for it).
	hello chan struct{}
	// ping is how often the relay pings the link: what the device asked
	// for in its upgrade request (wire.PingEvery).
	ping time.Duration
	// held is the Held of the last state-ok written (only the goroutine
	// that handles frames touches it): see unchangedHeld.
	held *wire.Held

	mu sync.Mutex
	// mu guards all following fields.
	sent map[uint64]int64  // seq -> EnqueuedAt (Unix ns) of records sent, for drain latency
	from map[uint64]string // seq -> sender DID of records sent and not acknowledged
}

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// tokenClock is the clock link tokens are checked on.
func (s *Server) tokenClock() clock.Clock {
	if s.Verifier != nil && s.Verifier.Clock != nil {
		return s.Verifier.Clock
	}
	return s.Clock
}

// ServeHTTP accepts a device link: it verifies the DID Bearer token, which
// must be a link token (bearer.IssueLink) not presented before (401 in
// the reference's form otherwise), checks the subprotocol, asks
// Agents.Admit, upgrades, and runs the handshake (handshake.go): only a
// device that signs the challenge with its DID's key gets the hello and
// becomes the agent's link. It then serves the link until it closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	agent := tok.DID()
	if !offersSubprotocol(r, wire.Subprotocol) {
		msg := "the link needs WebSocket subprotocol " + wire.Subprotocol
		if offersSubprotocol(r, wire.SubprotocolV1) {
			msg = "this relay speaks " + wire.Subprotocol + ", whose handshake proves possession of the device key; " +
				wire.SubprotocolV1 + " is refused: upgrade torpor-agent"
		}
		writeJSONError(w, http.StatusBadRequest, "link_version", msg)
		return
	}
	ceiling, err := s.Agents.Admit(r.Context(), agent)
	var ref *Refusal
	if errors.As(err, &ref) {
		writeJSONError(w, ref.Status, ref.Code, ref.Message)
		return
	}
	if err != nil {
		writeJSONError(w, http.StatusForbidden, "agent_not_admitted", err.Error())
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		return // Accept has answered
	}
	ws.SetReadLimit(wire.MaxFrame)
	// The link outlives the upgrade request: it ends when either side
	// closes, not when the handler's request context would.
	ctx, stop := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &serverConn{s: s, agent: agent, ws: ws, ctx: ctx, stop: stop, sent: map[uint64]int64{}, from: map[uint64]string{}, gone: make(chan struct{}), hello: make(chan struct{}),
		ping: wire.PingEvery(r.Header.Get(wire.PingHeader))}
	if err := c.handshake(tok.String()); err != nil {
		s.log().Warn("link handshake failed", "agent", agent.String(), "err", err)
		stop()
		return
	}
	s.attach(c)
	defer s.detach(c)
	err = c.write(ctx, &wire.Frame{T: wire.FrameHello, Bounds: &ceiling, Empty: c.queueEmpty(ctx)})
	close(c.hello)
	if err != nil {
		c.fail(err)
		return
	}
	go c.pinger()
	c.serve()
	c.unacked()
}

// queueEmpty reports whether the queue holds no record for the link's
// agent (wire.Frame.Empty); false when the queue could not say. The link
// is attached first: a record queued after this look is notified on it.
func (c *serverConn) queueEmpty(ctx context.Context) bool {
	recs, err := c.s.Queue.Next(ctx, c.agent.String(), 0, 1, clock.Or(c.s.Clock).Now())
	return err == nil && len(recs) == 0
}

// unacked reports, through Server.OnUnacked, the records the link
// delivered and the device did not acknowledge, by sender.
func (c *serverConn) unacked() {
	if c.s.OnUnacked == nil {
		return
	}
	by := map[string]int{}
	c.mu.Lock()
	for _, f := range c.from {
		by[f]++
	}
	c.mu.Unlock()
	c.s.OnUnacked(c.agent, by)
}

// authenticate checks the link token and spends it; it answers the
// request itself when it refuses.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*bearer.Token, bool) {
	tok, err := s.linkVerifier().VerifyToken(r.Header.Get("Authorization"))
	if err == nil {
		err = s.spend(r.Context(), tok)
	}
	if errors.Is(err, ErrBusy) {
		s.log().Warn("link refused", "err", err)
		msg := "too many links opened in the last minutes; retry later"
		if !errors.Is(err, shared.ErrFull) {
			msg = "the relay cannot reach its memory of spent link tokens; retry later"
		}
		w.Header().Set("Retry-After", "60")
		writeJSONError(w, http.StatusServiceUnavailable, "link_busy", msg)
		return nil, false
	}
	if err != nil {
		s.log().Info("link refused", "err", err)
		// The relay's clock, which checked the token, dates the refusal:
		// a device whose clock is far off issues its token again at this
		// time (transport/link's Dial).
		w.Header().Set("Date", clock.Or(s.tokenClock()).Now().UTC().Format(http.TimeFormat))
		bearerhttp.WriteUnauthorized(w, err)
		return nil, false
	}
	return tok, true
}

func offersSubprotocol(r *http.Request, want string) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if strings.TrimSpace(p) == want {
				return true
			}
		}
	}
	return false
}

// writeJSONError answers status with the error token code and msg, as the
// relay's other answers (internal/httpjson).
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	httpjson.Write(w, status, map[string]string{"error": code, "message": msg})
}

// attach makes c the agent's link, closing a previous one: a device that
// reconnects before the relay noticed its old socket died must not wait
// for the ping timeout.
func (s *Server) attach(c *serverConn) {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[string]*serverConn{}
	}
	old := s.conns[c.agent.String()]
	s.conns[c.agent.String()] = c
	if old != nil {
		close(old.gone)
	}
	s.mu.Unlock()
	if old != nil {
		// The agent stays linked: no Linked call, and the old link's
		// detach sees it is no longer current.
		old.ws.Close(websocket.StatusPolicyViolation, "replaced by a newer link")
		old.fail(errors.New("replaced by a newer link"))
	} else {
		s.Agents.Linked(c.agent, true)
	}
	s.log().Info("link up", "agent", c.agent.String())
}

func (s *Server) detach(c *serverConn) {
	s.mu.Lock()
	current := s.conns[c.agent.String()] == c
	if current {
		delete(s.conns, c.agent.String())
	}
	s.mu.Unlock()
	c.fail(ErrClosed)
	// Logged before the agents hear of it, so that the line is there by
	// the time the agent is offline.
	s.log().Info("link down", linkDownAttrs(c.agent.String(), c.calls.Err())...)
	if current {
		s.Agents.Linked(c.agent, false)
		close(c.gone) // after Linked: a caller of Gone sees the agent offline
	}
}

// linkDownAttrs are the "link down" line's attributes: a device that
// closed its link normally (its wake ended) closed it, which is no error;
// anything else is the error that ended the link.
func linkDownAttrs(agent string, err error) []any {
	switch {
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure:
		return []any{"agent", agent, "closedBy", "device"}
	case errors.Is(err, errStopping):
		return []any{"agent", agent, "closedBy", "relay"}
	}
	return []any{"agent", agent, "err", err}
}

func (s *Server) conn(agent string) *serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[agent]
}

// Up reports whether agent has a link now.
func (s *Server) Up(agent string) bool { return s.conn(agent) != nil }

// Gone returns a channel that is closed when the agent's link of now is no
// longer its link: the relay noticed it closed, or a newer link replaced
// it. It is closed already when the agent has no link. A device's close
// reaches the relay asynchronously; Gone lets a caller wait for it.
func (s *Server) Gone(agent string) <-chan struct{} {
	if c := s.conn(agent); c != nil {
		return c.gone
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Close closes every link.
func (s *Server) Close() {
	s.mu.Lock()
	cs := make([]*serverConn, 0, len(s.conns))
	for _, c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	// All at once: a close waits for the device's answer (up to the
	// websocket library's 5 s), and one device gone silent must not hold
	// up the close of every link after it (a relay's stop in a rolling
	// restart).
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			c.calls.Fail(errStopping) // first: the link down line's reason
			c.ws.Close(websocket.StatusGoingAway, "relay shutting down")
			c.fail(ErrClosed)
		})
	}
	wg.Wait()
}

// Forward sends req to agent's device over its link and returns the
// device's answer. It returns ErrNotLinked when there is no link or the
// request could not be written (the device did not get it), and
// ErrUnanswered when it was sent but the link dropped or ctx ended before
// the answer (the device may have processed it).
func (s *Server) Forward(ctx context.Context, agent string, req wire.Request) (wire.Response, error) {
	c := s.conn(agent)
	if c == nil {
		return wire.Response{}, ErrNotLinked
	}
	id, ch, err := c.calls.Open()
	if err != nil {
		return wire.Response{}, ErrNotLinked
	}
	defer c.calls.Forget(id)
	select {
	case <-c.hello: // the device reads the hello first
	case <-ctx.Done():
		return wire.Response{}, fmt.Errorf("%w: %v", ErrNotLinked, ctx.Err())
	}
	if err := c.write(ctx, &wire.Frame{T: wire.FrameRequest, ID: id, Request: &req}); err != nil {
		return wire.Response{}, fmt.Errorf("%w: %v", ErrNotLinked, err)
	}
	select {
	case f := <-ch:
		if f == nil {
			return wire.Response{}, fmt.Errorf("%w: %v", ErrUnanswered, c.calls.Err())
		}
		if f.T == wire.FrameError {
			return wire.Response{}, &wire.RemoteError{Code: f.Code, Message: f.Message}
		}
		if f.Response == nil {
			return wire.Response{}, fmt.Errorf("%w: response frame without response", wire.ErrProtocol)
		}
		return *f.Response, nil
	case <-ctx.Done():
		return wire.Response{}, fmt.Errorf("%w: %v", ErrUnanswered, ctx.Err())
	}
}

// Notify tells agent's device, if linked, that record seq was queued. It
// does not wait for the write.
func (s *Server) Notify(agent string, seq uint64) {
	c := s.conn(agent)
	if c == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer cancel()
		// A link attached before its hello went out (the relay looks at
		// the queue for it in between): the device reads the hello first.
		select {
		case <-c.hello:
		case <-ctx.Done():
			return
		}
		c.write(ctx, &wire.Frame{T: wire.FrameQueued, Seq: seq})
	}()
}

func (c *serverConn) write(ctx context.Context, f *wire.Frame) error {
	b, err := wire.Encode(f)
	if err != nil {
		return err
	}
	if err := c.ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		return &writeError{err}
	}
	return nil
}

// writeError is a frame the relay could not write: the connection is
// gone or stalled, which is the link's end, not a fault of the relay's
// (serve logs it so).
type writeError struct{ error }

func (e *writeError) Unwrap() error { return e.error }

// fail records the first error, wakes every pending Forward and stops the
// connection's goroutines.
func (c *serverConn) fail(err error) {
	c.calls.Fail(err)
	c.stop()
}

// pinger pings the link every c.ping and drops it when a pong does not
// come back within that interval (wire's "Liveness").
func (c *serverConn) pinger() {
	clk := clock.Or(c.s.Clock)
	for {
		if err := clock.Sleep(c.ctx, clk, c.ping); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.ping)
		err := c.ws.Ping(ctx)
		cancel()
		if err != nil {
			c.ws.Close(websocket.StatusPolicyViolation, "ping timeout")
			c.fail(fmt.Errorf("ping: %v", err))
			return
		}
	}
}

// keptFor bounds the store work of a device's state or ack that goes on
// after the link closed (kept).
const keptFor = 10 * time.Second

// kept is the context of a device's state or ack: what the device sent
// is stored even when the link closes meanwhile (a device that stops
// sends its last state and closes), within keptFor.
func kept(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), keptFor)
}

// serve reads frames until the link closes. Answers to the relay's own
// requests are delivered at once; the device's requests (state, pull, ack)
// are handled in order by one worker so that an ack is never overtaken by
// the pull after it, while a slow fsync does not delay live answers.
func (c *serverConn) serve() {
	work := make(chan *wire.Frame, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range work {
			if err := c.handle(f); err != nil {
				if we := (*writeError)(nil); c.ctx.Err() != nil || errors.As(err, &we) {
					// The link closed first (the device went): its
					// answer had nowhere to go. No fault of the relay.
					c.s.log().Info("link closed before the relay answered the device", "agent", c.agent.String(), "frame", f.T, "err", err)
					c.fail(err) // a stalled link, which the read loop may not know yet
					for range work {
					}
					return
				}
				c.s.log().Error("link closed: the relay failed a device's request", "agent", c.agent.String(), "frame", f.T, "err", err)
				// Close first, then fail: fail cancels the link's context,
				// and a read cancelled that way drops the connection before
				// the device could learn why (it saw EOF, not 1011).
				c.ws.Close(websocket.StatusInternalError, "relay error")
				c.fail(err)
				for range work {
				}
				return
			}
		}
	}()
	defer func() { close(work); <-done }()
	for {
		typ, b, err := c.ws.Read(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		if typ != websocket.MessageBinary {
			c.ws.Close(websocket.StatusUnsupportedData, "binary CBOR frames only")
			c.fail(fmt.Errorf("%w: text message", wire.ErrProtocol))
			return
		}
		f, err := wire.Decode(b)
		if err != nil {
			c.ws.Close(websocket.StatusProtocolError, err.Error())
			c.fail(err)
			return
		}
		switch f.T {
		case wire.FrameResponse, wire.FrameError:
			c.calls.Answer(f)
		case wire.FrameState, wire.FramePull, wire.FrameAck, wire.FrameUpdate:
			select {
			case work <- f:
			case <-c.ctx.Done():
				return
			}
		default:
			c.write(c.ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: "unknown-frame", Message: "unknown frame type " + f.T})
		}
	}
}

func (c *serverConn) handle(f *wire.Frame) error {
	ctx := c.ctx
	switch f.T {
	case wire.FrameState:
		if f.State == nil {
			return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: "bad-state", Message: "state frame without state"})
		}
		sctx, cancel := kept(ctx)
		defer cancel()
		a, err := c.s.Agents.Publish(sctx, c.agent, *f.State)
		if err != nil {
			return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: "bad-state", Message: err.Error()})
		}
		held := a.Held
		if unchangedHeld(f.State, c.held, held) || knownHeld(f.State, held) {
			held = nil
		}
		if a.Held != nil {
			c.held = a.Held
		}
		if err := c.write(ctx, &wire.Frame{T: wire.FrameStateOK, ID: f.ID, Bounds: &a.Bounds, Held: held, WakeSecond: a.WakeSecond, Offer: a.Offer, CardDigest: a.CardDigest}); err != nil || a.Relink == "" {
			return err
		}
		// After the answer, so that the device has its state-ok first.
		c.ws.Close(websocket.StatusPolicyViolation, a.Relink)
		c.fail(errors.New(a.Relink))
		return nil
	case wire.FramePull:
		return c.pull(ctx, f)
	case wire.FrameUpdate:
		return c.update(ctx, f)
	case wire.FrameAck:
		if seq, ok := c.delivered(f.Seqs); !ok {
			c.s.log().Warn("ack refused", "agent", c.agent.String(), "seq", seq)
			return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: CodeNotDelivered,
				Message: fmt.Sprintf("seq %d was not delivered on this link; nothing was deleted", seq)})
		}
		actx, cancel := kept(ctx)
		defer cancel()
		if err := c.s.Queue.Ack(actx, c.agent.String(), f.Seqs); err != nil {
			return err
		}
		c.acked(f.Seqs)
		return c.write(ctx, &wire.Frame{T: wire.FrameAcked, ID: f.ID})
	}
	return nil
}

func (c *serverConn) pull(ctx context.Context, f *wire.Frame) error {
	max := f.Max
	if max <= 0 || max > 1000 {
		max = 1000
	}
	now := clock.Or(c.s.Clock).Now()
	recs, err := c.s.Queue.Next(ctx, c.agent.String(), f.After, max, now)
	if err != nil {
		return err
	}
	out := make([]wire.Record, 0, len(recs))
	size := 0
	for _, r := range recs {
		if len(out) > 0 && size+len(r.Body) > wire.MaxBatchBytes {
			break
		}
		size += len(r.Body)
		out = append(out, wire.Record{
			Seq: r.Seq, From: r.From, Kind: uint8(r.Kind),
			EnqueuedAt: r.EnqueuedAt.UnixNano(), ExpiresAt: r.ExpiresAt.UnixNano(), Body: r.Body,
		})
	}
	c.mu.Lock()
	for _, r := range out {
		c.sent[r.Seq] = r.EnqueuedAt
		c.from[r.Seq] = r.From
	}
	c.mu.Unlock()
	more := len(out) < len(recs) || len(recs) == max
	return c.write(ctx, &wire.Frame{T: wire.FrameRecords, ID: f.ID, Records: out, More: more})
}

// delivered reports whether every seq of seqs was delivered on this link
// (sent in a records frame and not acknowledged since), and the first
// that was not. An acknowledgement deletes records, so the relay takes
// one only for records this link received: a link never deletes what it
// did not drain.
func (c *serverConn) delivered(seqs []uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range seqs {
		if _, ok := c.sent[s]; !ok {
			return s, false
		}
	}
	return 0, true
}

func (c *serverConn) acked(seqs []uint64) {
	now := clock.Or(c.s.Clock).Now()
	var waited []time.Duration
	c.mu.Lock()
	for _, s := range seqs {
		if at, ok := c.sent[s]; ok {
			waited = append(waited, now.Sub(time.Unix(0, at)))
			delete(c.sent, s)
			delete(c.from, s)
		}
	}
	c.mu.Unlock()
	if c.s.OnAcked != nil && len(waited) > 0 {
		c.s.OnAcked(c.agent, waited)
	}
}

// unchangedHeld reports whether the state-ok of st may leave Held out:
// st published no KeyPackage and the relay holds the same ones as it said
// in the link's last state-ok (last). The device learns nothing from a
// Held it already had, and an absent Held means "not said" to every
// version of the agent (wire.Accepted), so it is not sent again: with a
// pool of 20 KeyPackages that is 700 bytes of every announce.
func unchangedHeld(st *wire.State, last, now *wire.Held) bool {
	if last == nil || now == nil || publishesKeyPackages(st) {
		return false
	}
	if !bytes.Equal(last.LastResort, now.LastResort) || len(last.Digests) != len(now.Digests) {
		return false
	}
	seen := make(map[string]bool, len(last.Digests))
	for _, d := range last.Digests {
		seen[string(d)] = true
	}
	for _, d := range now.Digests {
		if !seen[string(d)] {
			return false
		}
	}
	return true
}

// knownHeld reports whether the state-ok of st may leave Held out because
// the device says it knows it (wire.State.HeldDigest): st published no
// KeyPackage and names the HeldDigest of now.
func knownHeld(st *wire.State, now *wire.Held) bool {
	return now != nil && st.HeldDigest != nil && !publishesKeyPackages(st) && bytes.Equal(st.HeldDigest, wire.HeldDigest(now))
}

// publishesKeyPackages reports whether st changes the pool or the
// last-resort KeyPackage.
func publishesKeyPackages(st *wire.State) bool {
	return len(st.KeyPackages) > 0 || len(st.LastResort) > 0 || st.ReplaceKeyPackages
}
