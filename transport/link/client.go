package link

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/http1"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/internal/calls"
	"github.com/torpor-dev/torpor/transport/link/internal/wsclient"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// ErrClosed is returned by Client calls after the link closed; Err tells
// why.
var ErrClosed = errors.New("link: closed")

// HandlerFunc answers a live request the relay forwarded. It runs in its
// own goroutine; ctx ends when the link closes.
type HandlerFunc func(ctx context.Context, req wire.Request) wire.Response

// Config configures Dial.
type Config struct {
	// RelayURL is the relay's public base URL (http or https); the link is
	// opened to the same host with ws or wss at Path.
	RelayURL string
	// Key is the device's identity; the link authenticates as its DID.
	Key *did.PrivateKey
	// Audience is the token audience; empty means RelayURL's origin.
	Audience string
	// Handler answers live requests; nil answers every request 503.
	Handler HandlerFunc
	// Clock stamps the token; nil is the real clock.
	Clock clock.Clock
	// TLSConfig configures the connection to an https relay; nil means
	// the system roots, with the relay's host name for SNI. The link goes
	// through the HTTP proxy the environment names (HTTPS_PROXY,
	// HTTP_PROXY, NO_PROXY), as net/http's default client did.
	TLSConfig *tls.Config
	// PingInterval is how often the link asks the relay to ping it
	// (wire.PingHeader), held between wire.PingInterval and
	// wire.MaxPingInterval; zero asks for nothing, and the relay pings
	// every wire.PingInterval. The link is read as dead after two such
	// intervals and 15 s without a frame (IdleTimeout for zero).
	PingInterval time.Duration
}

// pingInterval is the interval between pings that c asks for, 0 for none.
func (c *Config) pingInterval() time.Duration {
	if c.PingInterval <= 0 {
		return 0
	}
	return min(max(c.PingInterval, wire.PingInterval), wire.MaxPingInterval)
}

// idleTimeout is how long the link waits for a frame to begin: two of the
// relay's ping intervals and 15 s (IdleTimeout when c asks for none).
func (c *Config) idleTimeout() time.Duration {
	if p := c.pingInterval(); p > 0 {
		return 2*p + 15*time.Second
	}
	return IdleTimeout
}

// Client is the device's side of a link. Its methods are safe for
// concurrent use. A Client serves one connection: after it closes, Dial
// again (with backoff; the agent's duty cycle decides when).
type Client struct {
	ws      *wsclient.Conn
	hello   queuebounds.Bounds
	handler HandlerFunc
	ctx     context.Context
	stop    context.CancelFunc
	queued  chan uint64
	done    chan struct{}
	calls   calls.Table
	meter   *meter

	empty      bool      // the hello's wire.Frame.Empty
	relayTime  time.Time // the relay's time in its challenge
	relayLocal time.Time // the link's clock when the challenge arrived
	relaySent  time.Time // the link's clock before the upgrade the relay answered
}

// Dial opens a link to the relay, proves possession of the device key
// (the handshake of package wire: the relay's challenge, signed) and waits
// for the relay's hello frame. An HTTP refusal (401 for a bad or reused
// token, 403 for an agent the relay does not admit, 400 for a relay of
// another link version) is returned as an error that quotes the relay's
// answer.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Key == nil {
		return nil, errors.New("link: Dial needs a key")
	}
	u, err := url.Parse(cfg.RelayURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("link: relay URL %q is not an http(s) URL", cfg.RelayURL)
	}
	aud := cfg.Audience
	if aud == "" {
		aud = u.Scheme + "://" + u.Host
	}
	if aud, err = bearer.NormalizeAudience(aud); err != nil {
		return nil, err
	}
	hctx, cancel := clock.WithTimeoutCause(ctx, clock.Unscaled(clock.Or(cfg.Clock)), HandshakeTimeout, ErrHandshakeTimeout)
	defer cancel()
	m := new(meter)
	conn, tok, sent, err := open(hctx, cfg, m, u, aud)
	if err != nil {
		return nil, err
	}
	c := &Client{ws: conn, handler: cfg.Handler, queued: make(chan uint64, 64), done: make(chan struct{}), relaySent: sent, meter: m}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if err := c.handshake(hctx, cfg, aud, tok); err != nil {
		conn.Close(wsclient.StatusPolicyViolation, "handshake failed")
		c.stop()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

// HandshakeTimeout bounds Dial's whole opening, on the link's clock (its
// unscaled base: the relay is a real peer): the TCP and TLS connection,
// the WebSocket upgrade (a 401 and the one retry included), the challenge,
// the proof and the hello. A relay that trickles its 101 or its
// challenge costs the device this long, not its whole window.
const HandshakeTimeout = 10 * time.Second

// ErrHandshakeTimeout is the cause of a Dial that HandshakeTimeout ended.
var ErrHandshakeTimeout = errors.New("link: the relay did not finish the handshake within " + HandshakeTimeout.String())

// IdleTimeout and FrameTimeout bound each read of the link once it is
// open (real time: package wsclient's per-frame deadlines on the
// connection). The relay pings every wire.PingInterval, so a link that
// hears nothing for IdleTimeout is dead (a link that asked for fewer pings,
// Config.PingInterval, waits two of its intervals and 15 s); a frame whose first byte arrived
// must arrive whole within FrameTimeout plus its length at MinReadRate (a
// slow cellular link's rate: a full wire.MaxFrame gets 17 minutes).
const (
	IdleTimeout  = 2*wire.PingInterval + 15*time.Second
	FrameTimeout = 30 * time.Second
	MinReadRate  = 8 << 10
)

// MaxClockOffset is how far the device's clock may be from the relay's
// before a refused link token is issued again at the relay's time.
const MaxClockOffset = 30 * time.Second

// open issues a link token on the link's clock and opens the WebSocket
// with it. A device whose clock is far behind (a Raspberry Pi without an
// RTC boots with fake-hwclock's time, hours old) or ahead issues a token
// the relay refuses as expired or not yet valid: when the relay's 401
// carries a Date header (RFC 9110, Section 6.6.1) more than MaxClockOffset
// away from the link's clock, open issues one more token at that time and
// tries once more. The Date header only stamps the token, which the relay
// checks against its own clock anyway; nothing of the device trusts it
// (the relay's time the device may use is the challenge's, RelayTime).
// It also returns the link clock's reading before the upgrade that
// succeeded: the relay stamps its challenge after that request reached it.
func open(ctx context.Context, cfg Config, m *meter, u *url.URL, aud string) (*wsclient.Conn, string, time.Time, error) {
	now := clock.Or(cfg.Clock).Now()
	tok, err := bearer.IssueLink(cfg.Key, aud, now, 0)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	conn, err := upgrade(ctx, cfg, m, u, tok)
	var r *refusal
	if !errors.As(err, &r) || r.status != 401 || r.date.IsZero() {
		return conn, tok, now, err
	}
	if off := r.date.Sub(now.Round(0)); off > -MaxClockOffset && off < MaxClockOffset {
		return nil, "", time.Time{}, err
	}
	if tok, err = bearer.IssueLink(cfg.Key, aud, r.date, 0); err != nil {
		return nil, "", time.Time{}, err
	}
	sent := clock.Or(cfg.Clock).Now()
	conn, err = upgrade(ctx, cfg, m, u, tok)
	return conn, tok, sent, err
}

// refusal is the relay's HTTP answer refusing the upgrade.
type refusal struct {
	status int
	text   string
	date   time.Time // the Date header; zero without one
}

func (r *refusal) Error() string {
	return fmt.Sprintf("link: relay refused the link: %s", r.text)
}

// upgrade opens the WebSocket with the link token (package wsclient, RFC
// 6455). A refusal's Date is read as an HTTP date (RFC 9110, Section
// 5.6.7). m counts the connection's bytes.
func upgrade(ctx context.Context, cfg Config, m *meter, u *url.URL, tok string) (*wsclient.Conn, error) {
	ws := *u
	ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	ws.Path = strings.TrimRight(u.Path, "/") + wire.Path
	header := []http1.Field{{Name: "Authorization", Value: bearer.Authorization(tok)}}
	if p := cfg.pingInterval(); p > 0 {
		header = append(header, http1.Field{Name: wire.PingHeader, Value: strconv.Itoa(int(p / time.Second))})
	}
	conn, err := wsclient.Dial(ctx, ws.String(), &wsclient.Options{
		Header:       header,
		Subprotocols: []string{wire.Subprotocol},
		TLSConfig:    cfg.TLSConfig,
		Proxy:        wsclient.ProxyFromEnvironment,
		NetDial:      m.dial,
		ReadLimit:    wire.MaxFrame,
		IdleTimeout:  cfg.idleTimeout(),
		FrameTimeout: FrameTimeout,
		MinReadRate:  MinReadRate,
	})
	var he *wsclient.HandshakeError
	if errors.As(err, &he) {
		date, _ := http1.ParseDate(he.Header.Get("Date"))
		return nil, &refusal{status: he.StatusCode, text: he.Status + ": " + strings.TrimSpace(string(he.Body)), date: date}
	}
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	return conn, nil
}

// handshake answers the relay's challenge with a proof signed by key
// (wire.ProofMessage), refusing a challenge for another origin than aud,
// and reads the hello.
func (c *Client) handshake(ctx context.Context, cfg Config, aud, tok string) error {
	key := cfg.Key
	f, err := c.read(ctx)
	if err != nil {
		return err
	}
	if f.T != wire.FrameChallenge || f.Challenge == nil {
		return fmt.Errorf("%w: first frame %q, want challenge", wire.ErrProtocol, f.T)
	}
	c.relayTime, c.relayLocal = time.Unix(f.Challenge.Time, 0), clock.Or(cfg.Clock).Now()
	if f.Challenge.Origin != aud {
		return fmt.Errorf("%w: challenge for origin %q, this link is to %q", wire.ErrProtocol, f.Challenge.Origin, aud)
	}
	msg, err := wire.ProofMessage(*f.Challenge, key.DID().String(), tok)
	if err != nil {
		return err
	}
	if err := c.write(ctx, &wire.Frame{T: wire.FrameProof, Proof: key.Sign(msg)}); err != nil {
		return err
	}
	if f, err = c.read(ctx); err != nil {
		return fmt.Errorf("link: handshake: %w", err)
	}
	if f.T == wire.FrameError {
		return &wire.RemoteError{Code: f.Code, Message: f.Message}
	}
	if f.T != wire.FrameHello || f.Bounds == nil {
		return fmt.Errorf("%w: frame %q after the proof, want hello", wire.ErrProtocol, f.T)
	}
	c.hello, c.empty = *f.Bounds, f.Empty
	return nil
}

// QueueEmpty reports whether the relay's hello said that its queue held
// no record for the device once the link was up (wire.Frame.Empty); a
// record queued since comes on Queued. False from a relay that does not
// say: then only a Pull tells.
func (c *Client) QueueEmpty() bool { return c.empty }

// RelayTime returns the relay's time as its handshake challenge stated
// it (wire.Challenge.Time, whole seconds, so up to a second behind the
// relay's clock) and the reading of the link's clock when the challenge
// arrived. The challenge came over the connection the device opened to the
// relay's origin (TLS authenticates that origin on an https relay), the
// device refused a challenge for another origin, and the proof the relay
// accepted signs the time with the connection's nonce and token: the time
// is the one this relay stated on this connection. docs/security.md says
// what a device may do with it.
func (c *Client) RelayTime() (relay, local time.Time) { return c.relayTime, c.relayLocal }

// RelayExchange is RelayTime with the round trip that bounds it: the
// link clock's reading before the device sent the upgrade request the
// challenge answered (the relay stamps the challenge after the request
// reached it, so between sent and received on the device's clock), and
// when the challenge arrived. runtime/trusted reads the relay's offset
// from it as NTP reads a server's (RFC 5905, Section 8).
func (c *Client) RelayExchange() (relay, sent, received time.Time) {
	return c.relayTime, c.relaySent, c.relayLocal
}

// Hello returns the ceiling bounds the relay announced for this agent.
func (c *Client) Hello() queuebounds.Bounds { return c.hello }

// Publish sends the device's state and returns the bounds in force and
// the KeyPackages the relay holds. A refusal (a card not signed by the
// device, say) is a *RemoteError.
func (c *Client) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	f, err := c.call(ctx, &wire.Frame{T: wire.FrameState, State: &st})
	if err != nil {
		return wire.Accepted{}, err
	}
	if f.T != wire.FrameStateOK || f.Bounds == nil {
		return wire.Accepted{}, fmt.Errorf("%w: answer %q to state", wire.ErrProtocol, f.T)
	}
	if f.WakeSecond != nil && (*f.WakeSecond < 0 || *f.WakeSecond > 59) {
		return wire.Accepted{}, fmt.Errorf("%w: state-ok assigns wake second %d, outside 0-59", wire.ErrProtocol, *f.WakeSecond)
	}
	if f.Offer != nil {
		if err := f.Offer.Check(); err != nil {
			return wire.Accepted{}, err
		}
	}
	if f.CardDigest != nil && len(f.CardDigest) != sha256.Size {
		return wire.Accepted{}, fmt.Errorf("%w: state-ok names a card digest of %d bytes", wire.ErrProtocol, len(f.CardDigest))
	}
	return wire.Accepted{Bounds: *f.Bounds, Held: f.Held, WakeSecond: f.WakeSecond, Offer: f.Offer, CardDigest: f.CardDigest}, nil
}

// Pull asks for up to max records with seq > after and returns them in seq
// order, and whether more may follow.
func (c *Client) Pull(ctx context.Context, after uint64, max int) ([]wire.Record, bool, error) {
	f, err := c.call(ctx, &wire.Frame{T: wire.FramePull, After: after, Max: max})
	if err != nil {
		return nil, false, err
	}
	if f.T != wire.FrameRecords {
		return nil, false, fmt.Errorf("%w: answer %q to pull", wire.ErrProtocol, f.T)
	}
	return f.Records, f.More, nil
}

// Update asks the relay's update repository for what req names (a
// metadata file, a range of a blob, a fresh timestamp) and returns its
// bytes. A relay without the file answers a *wire.RemoteError with code
// wire.CodeUpdateNotFound.
func (c *Client) Update(ctx context.Context, req wire.UpdateRequest) ([]byte, error) {
	f, err := c.call(ctx, &wire.Frame{T: wire.FrameUpdate, Update: &req})
	if err != nil {
		return nil, err
	}
	if f.T != wire.FrameUpdateData {
		return nil, fmt.Errorf("%w: answer %q to update", wire.ErrProtocol, f.T)
	}
	return f.Data, nil
}

// Ack tells the relay to delete the records seqs; it returns when the
// deletion committed. Acknowledge only what the device's own transaction
// has committed.
func (c *Client) Ack(ctx context.Context, seqs []uint64) error {
	f, err := c.call(ctx, &wire.Frame{T: wire.FrameAck, Seqs: seqs})
	if err != nil {
		return err
	}
	if f.T != wire.FrameAcked {
		return fmt.Errorf("%w: answer %q to ack", wire.ErrProtocol, f.T)
	}
	return nil
}

// Drain pulls every queued record in batches of batch, calls fn with each
// batch in seq order and acknowledges the batch when fn returns nil. It
// stops at the first error (the batch is not acknowledged and will be
// delivered again on the next link) and returns how many records were
// acknowledged.
func (c *Client) Drain(ctx context.Context, batch int, fn func(context.Context, []wire.Record) error) (int, error) {
	var after uint64
	n := 0
	for {
		recs, more, err := c.Pull(ctx, after, batch)
		if err != nil {
			return n, err
		}
		if len(recs) == 0 {
			return n, nil
		}
		if err := fn(ctx, recs); err != nil {
			return n, err
		}
		seqs := make([]uint64, len(recs))
		for i, r := range recs {
			seqs[i] = r.Seq
		}
		if err := c.Ack(ctx, seqs); err != nil {
			return n, err
		}
		n += len(recs)
		after = recs[len(recs)-1].Seq
		if !more {
			return n, nil
		}
	}
}

// Queued delivers the seq of each record the relay queued while the link
// was up (outside the window, or in sleep mode). Notifications that find
// the channel full are dropped: a Pull after the last one returns them all.
func (c *Client) Queued() <-chan uint64 { return c.queued }

// Done is closed when the link has closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the link closed, or nil while it is open.
func (c *Client) Err() error { return c.calls.Err() }

// Close closes the link.
func (c *Client) Close() error {
	err := c.ws.Close(wsclient.StatusNormalClosure, "")
	c.fail(ErrClosed)
	<-c.done
	return err
}

func (c *Client) call(ctx context.Context, f *wire.Frame) (*wire.Frame, error) {
	id, ch, err := c.calls.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	f.ID = id
	defer c.calls.Forget(id)
	if err := c.write(ctx, f); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r == nil {
			return nil, fmt.Errorf("%w: %v", ErrClosed, c.Err())
		}
		if r.T == wire.FrameError {
			return nil, &wire.RemoteError{Code: r.Code, Message: r.Message}
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) write(ctx context.Context, f *wire.Frame) error {
	b, err := wire.Encode(f)
	if err != nil {
		return err
	}
	if err := c.ws.Write(ctx, wsclient.OpBinary, b); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	return nil
}

func (c *Client) read(ctx context.Context) (*wire.Frame, error) {
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != wsclient.OpBinary {
		return nil, fmt.Errorf("%w: text message", wire.ErrProtocol)
	}
	return wire.Decode(b)
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		f, err := c.read(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		switch f.T {
		case wire.FrameRequest:
			go c.serveRequest(f)
		case wire.FrameQueued:
			select {
			case c.queued <- f.Seq:
			default:
			}
		default:
			c.calls.Answer(f)
		}
	}
}

func (c *Client) serveRequest(f *wire.Frame) {
	resp := wire.Response{Status: 503, ContentType: "application/json", Body: []byte(`{"error":"no_handler"}`)}
	if c.handler != nil && f.Request != nil {
		resp = c.handler(c.ctx, *f.Request)
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	c.write(ctx, &wire.Frame{T: wire.FrameResponse, ID: f.ID, Response: &resp})
}

func (c *Client) fail(err error) {
	c.calls.Fail(err)
	c.stop()
}
