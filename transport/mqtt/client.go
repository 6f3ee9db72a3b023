package mqtt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/mqttsession"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqttconn"
)

// Defaults of Config.
const (
	DefaultSessionExpiry  = 30 * 24 * time.Hour
	DefaultKeepAlive      = 60 * time.Second
	DefaultBarrierTimeout = 3 * time.Second
)

// Config configures a device's Client. Broker, Name, Key, DB and Handler
// are required.
type Config struct {
	// Broker is the MQTT 5 broker URL: mqtt:// or tcp:// (plain),
	// mqtts:// or tls:// (TLS with Security.TLS), or a bare HOST:PORT
	// (plain); see mqttconn.ParseBroker.
	Broker string
	// Prefix is the topic prefix; empty means DefaultPrefix.
	Prefix string
	// Name is the device's name: its topic level and MQTT client id. It
	// must stay the same across restarts and key rotations, since the
	// broker keeps the session under it.
	Name string
	// Key is the device's identity: it signs replies, statuses and
	// events. SetKey replaces it.
	Key *did.PrivateKey
	// DB is the agent's bbolt file: the MQTT session state, the inbox and
	// the outbound queue live there.
	DB *bolt.DB
	// Handler admits, runs and answers the commands received.
	Handler Handler
	// Timing is the session's lifetime, keep-alive and reconnection.
	Timing Timing
	// Security is how the client trusts and logs in to the broker.
	Security Security
	// Clock tells the time; nil means clock.Real.
	Clock clock.Clock
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Version is the agent's version, reported in every status.
	Version string
	// StopOnly connects only to end the session with Close: the client
	// takes no command (they stay in the broker session for the next
	// start). An agent stopped while asleep uses it to publish status
	// stopped.
	StopOnly bool
}

// Timing is a Client's session lifetime, keep-alive and reconnection;
// zero members mean their defaults.
type Timing struct {
	// SessionExpiry is how long the broker keeps the session (and the
	// commands queued in it) after a disconnect. It must exceed the
	// longest sleep; zero means DefaultSessionExpiry, and a value of
	// 0xFFFFFFFF seconds or more means never (MQTT 5.0 Section 3.1.2.11.2).
	SessionExpiry time.Duration
	// KeepAlive is the MQTT keep-alive; zero means DefaultKeepAlive.
	KeepAlive time.Duration
	// BarrierTimeout bounds the wait for the end-of-backlog probe after a
	// connection comes up; zero means DefaultBarrierTimeout. It is a
	// network round trip, timed on clock.Unscaled(Clock).
	BarrierTimeout time.Duration
	// Backoff gives the wait before reconnection attempt n (0 is the
	// first connection); nil means exponential with jitter from 1 s to
	// 60 s. It waits on the real clock.
	Backoff func(attempt int) time.Duration
}

// Security is how a Client trusts and logs in to the broker.
type Security struct {
	// TLS configures mqtts:// and tls:// brokers; nil means the
	// defaults.
	TLS *tls.Config
	// Password, when set, is sent instead of a DID Bearer token: a static
	// secret for an external broker that checks passwords (torporctl mqtt
	// acl). The embedded broker wants tokens.
	Password []byte
	// AuthClock dates the token presented to the broker at each
	// connection (login.Authenticate); nil means clock.Real. The broker checks
	// it against its own clock, not against the device's schedule.
	AuthClock clock.Clock
}

// Client is a device's MQTT side: it keeps a persistent session with the
// broker, takes commands, and publishes replies, status and events. See
// the package documentation.
type Client struct {
	cfg      Config
	topics   Topics
	clock    clock.Clock
	log      *slog.Logger
	cm       *mqttconn.Manager
	queue    *mqttsession.Queue
	state    *state.State
	sessions *mqttsession.Store

	ctx     context.Context // ends when the Client stops
	cancel  context.CancelFunc
	started chan struct{} // closed once cm is set
	events  chan event
	// statusKick asks statusLoop to publish the status again.
	statusKick chan struct{}
	// statusMu serialises status publications; it guards statusFinal.
	statusMu    sync.Mutex
	statusFinal bool
	wg          sync.WaitGroup

	mu sync.Mutex
	// mu guards all following fields.
	key         *did.PrivateKey
	handover    []byte   // the key handover to present (SetHandover)
	conn        net.Conn // the current network connection, for Abort
	connectedAt time.Time
	ready       chan struct{} // closed once the current connection is ready
	readyClosed bool
	busy        int           // commands taken and not yet finished
	idle        chan struct{} // closed while busy is 0
	closing     bool
	aborted     bool
	connects    int
}

// Start checks cfg, opens the session state and outbound queue in cfg.DB
// and starts connecting to the broker in the background (mqttconn
// reconnects by itself). Use AwaitConnection to wait for the connection,
// and Sleep, Close or Abort to end it.
func Start(cfg Config) (*Client, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	recovered, err := c.recoverInbox()
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("mqtt: recovering the inbox: %w", err)
	}
	cm, err := mqttconn.Start(c.connConfig())
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	c.cm = cm
	close(c.started)
	c.wg.Add(2)
	go c.dispatch(recovered)
	go c.statusLoop()
	return c, nil
}

func newClient(cfg Config) (*Client, error) {
	if cfg.Key == nil || cfg.DB == nil || cfg.Handler == nil {
		return nil, errors.New("mqtt: Config needs Key, DB and Handler")
	}
	u, err := mqttconn.ParseBroker(cfg.Broker)
	if err != nil {
		return nil, err
	}
	cfg.Broker = u.String() // a bare HOST:PORT gets its scheme, for the token's audience
	t := Topics{Prefix: cfg.Prefix, Device: cfg.Name}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	setDefaults(&cfg)
	st, sessions, err := mqttsession.NewState(cfg.DB, "mqtt-session")
	if err != nil {
		return nil, err
	}
	q, err := mqttsession.OpenQueue(cfg.DB, "mqtt-outbox", nil)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, topics: t, clock: clock.Or(cfg.Clock), log: cfg.Logger, queue: q, sessions: sessions,
		key: cfg.Key, events: make(chan event, 256), ready: make(chan struct{}), idle: closedChan(),
		statusKick: make(chan struct{}, 1), started: make(chan struct{})}
	c.state = st
	c.closing = cfg.StopOnly
	c.handover = loadHandover(cfg.DB)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

func setDefaults(cfg *Config) {
	if cfg.Timing.SessionExpiry == 0 {
		cfg.Timing.SessionExpiry = DefaultSessionExpiry
	}
	if cfg.Timing.KeepAlive == 0 {
		cfg.Timing.KeepAlive = DefaultKeepAlive
	}
	if cfg.Timing.BarrierTimeout == 0 {
		cfg.Timing.BarrierTimeout = DefaultBarrierTimeout
	}
	if cfg.Timing.Backoff == nil {
		cfg.Timing.Backoff = mqttconn.JitteredBackoff(time.Second, time.Minute)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "mqtt")
}

// sessionExpirySeconds converts d to the MQTT property, saturating at
// 0xFFFFFFFF (never).
func sessionExpirySeconds(d time.Duration) uint32 {
	s := d / time.Second
	if s >= 0xFFFFFFFF {
		return 0xFFFFFFFF
	}
	return uint32(s)
}

func (c *Client) connConfig() mqttconn.Config {
	u, _ := url.Parse(c.cfg.Broker)
	var trace pahoLogger
	if c.log.Enabled(context.Background(), slog.LevelDebug-4) {
		trace = pahoLogger{c.log.With("lib", "paho"), slog.LevelDebug - 4}
	}
	cfg := mqttconn.Config{
		Server: u,
		TLS:    c.cfg.Security.TLS,
		Connect: mqttconn.Connect{
			KeepAlive:     uint16(min(c.cfg.Timing.KeepAlive/time.Second, 0xFFFF)),
			CleanStart:    false,
			SessionExpiry: sessionExpirySeconds(c.cfg.Timing.SessionExpiry),
			Timeout:       10 * time.Second,
			Packet:        c.connectPacket,
		},
		// A persistent session: the broker keeps the subscription and
		// queues commands while the device sleeps (MQTT 5.0 Section
		// 3.1.2.4), for SessionExpiry after each disconnect.
		Backoff:          c.cfg.Timing.Backoff,
		Queue:            c.queue,
		Dial:             c.dial,
		DisconnectPacket: c.disconnectPacket,
		Hooks: mqttconn.Hooks{
			OnConnectionUp:   func(ca *paho.Connack) { go c.connectionUp(ca) },
			OnConnectionDown: c.connectionDown,
			OnConnectError:   func(err error) { c.log.Debug("connection attempt failed", "err", err) },
		},
		Logs: mqttconn.Logs{
			Errors:     pahoLogger{c.log.With("lib", "mqttconn"), slog.LevelWarn},
			PahoErrors: pahoLogger{c.log.With("lib", "paho"), slog.LevelWarn},
		},
		Client: paho.ClientConfig{
			ClientID: c.cfg.Name,
			Session:  c.state,
			// Commands are acknowledged only after their outcome is
			// committed, so a crash before that makes the broker deliver
			// them again (MQTT 5.0 Section 4.4).
			EnableManualAcknowledgment: true,
			SendAcksInterval:           10 * time.Millisecond,
			OnPublishReceived:          []func(paho.PublishReceived) (bool, error){c.received},
		},
	}
	c.state.SetErrorLogger(pahoLogger{c.log.With("lib", "paho-session"), slog.LevelWarn})
	if trace.log != nil {
		// Below debug: paho's own trace, for diagnosing the library.
		cfg.Logs.Debug, cfg.Logs.PahoDebug = trace, trace
		c.state.SetDebugLogger(pahoLogger{c.log.With("lib", "paho-session"), slog.LevelDebug - 4})
	}
	return cfg
}

// dial opens the network connection and keeps it for Abort.
func (c *Client) dial(ctx context.Context, u *url.URL) (net.Conn, error) {
	conn, err := mqttconn.Dial(ctx, u, c.cfg.Security.TLS)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		conn.Close()
		return nil, errors.New("mqtt: client aborted")
	}
	c.conn = conn
	return conn, nil
}

// connectPacket authenticates with a fresh token (login.Authenticate) and adds
// the will: a retained status "lost", signed now, that the broker
// publishes if this connection ends without a DISCONNECT (MQTT 5.0
// Section 3.1.2.5).
func (c *Client) connectPacket(cp *paho.Connect) (*paho.Connect, error) {
	if err := login.Authenticate(cp, c.Key(), c.cfg.Broker, clock.Or(c.cfg.Security.AuthClock).Now(), c.cfg.Security.Password); err != nil {
		return nil, err
	}
	if h := c.keyHandover(); h != nil {
		cp.Properties.User.Add(login.HandoverProperty, string(h))
	}
	will, err := c.statusPayload(envelope.StateLost, c.clock.Now(), nil)
	if err != nil {
		return nil, err
	}
	cp.WillMessage = &paho.WillMessage{Topic: c.topics.Status(), QoS: 1, Retain: true, Payload: will}
	cp.WillProperties = &paho.WillProperties{ContentType: envelope.ContentTypeJSON}
	return cp, nil
}

// disconnectPacket is a normal DISCONNECT (the will is discarded), or none
// after Abort, as a power cut would leave it.
func (c *Client) disconnectPacket() *paho.Disconnect {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		return nil
	}
	return &paho.Disconnect{ReasonCode: 0}
}

// received is paho's handler for every inbound PUBLISH. It must not block
// for long: it hands the message to the dispatcher.
func (c *Client) received(pr paho.PublishReceived) (bool, error) {
	c.log.Debug("received", "topic", pr.Packet.Topic, "id", pr.Packet.PacketID, "dup", pr.Packet.Duplicate(), "bytes", len(pr.Packet.Payload))
	select {
	case c.events <- event{kind: evMessage, msg: inbound{pub: pr.Packet, cli: pr.Client}}:
	case <-c.ctx.Done():
	}
	return true, nil
}

// connectionUp runs once per connection: subscribe (again: the session may
// be new, or the broker may have lost it), publish status awake, then
// publish the end-of-backlog probe, and mark the client ready.
func (c *Client) connectionUp(ca *paho.Connack) {
	select {
	case <-c.started: // mqttconn may connect before Start stored cm
	case <-c.ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	nonce, flushed := newNonce(), make(chan struct{})
	c.mu.Lock()
	c.connectedAt = c.clock.Now()
	c.connects++
	if c.readyClosed {
		c.ready, c.readyClosed = make(chan struct{}), false
	}
	ready := c.ready
	c.mu.Unlock()
	c.send(event{kind: evConnUp, nonce: nonce, flushed: flushed})
	retry := false
	if err := c.subscribe(ctx); err != nil {
		if ca.SessionPresent && errors.Is(err, errPacketIDInUse) {
			// mochi checks a SUBSCRIBE's packet identifier against the
			// identifiers of its own in-flight deliveries to the client,
			// which MQTT 5.0 Section 2.2.1 keeps independent, and refuses
			// it (0x91) while it redelivers the session's backlog. The
			// session's subscriptions stand; subscribe again once the
			// backlog is handled.
			retry = true
			c.log.Debug("re-subscription refused while the broker delivers the backlog; retrying after it", "err", err)
		} else {
			c.log.Warn("subscribing failed; commands wait for the next connection", "err", err)
		}
	}
	if c.cfg.StopOnly {
		// Connected only to say stopped: never awake.
	} else if err := c.PublishStatus(ctx); err != nil {
		c.log.Warn("publishing status failed", "err", err)
	}
	if _, err := c.cm.Publish(ctx, &paho.Publish{Topic: c.topics.Sync(), QoS: 1, Payload: []byte(nonce)}); err != nil {
		c.log.Warn("publishing the backlog probe failed; waiting for the barrier timeout", "err", err)
	}
	c.mu.Lock()
	if c.ready == ready && !c.readyClosed {
		close(ready)
		c.readyClosed = true
	}
	c.mu.Unlock()
	if retry {
		select {
		case <-flushed:
			if err := c.subscribe(ctx); err != nil {
				c.log.Warn("re-subscribing after the backlog failed; the session's subscription stands", "err", err)
			}
		case <-ctx.Done():
		}
	}
}

var errPacketIDInUse = errors.New("packet identifier in use")

func (c *Client) subscribe(ctx context.Context) error {
	sa, err := c.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: c.topics.Command(), QoS: 1},
		{Topic: c.topics.Sync(), QoS: 1},
	}})
	if err != nil && sa != nil && len(sa.Reasons) > 0 && sa.Reasons[0] == 0x91 {
		return fmt.Errorf("%w (SUBACK reasons %x)", errPacketIDInUse, sa.Reasons)
	}
	if err != nil && sa != nil {
		return fmt.Errorf("%w (SUBACK reasons %x)", err, sa.Reasons)
	}
	return err
}

func (c *Client) connectionDown() {
	c.mu.Lock()
	if c.readyClosed {
		c.ready, c.readyClosed = make(chan struct{}), false
	}
	c.mu.Unlock()
	c.send(event{kind: evConnDown})
}

func (c *Client) send(ev event) {
	select {
	case c.events <- ev:
	case <-c.ctx.Done():
	}
}

// AwaitConnection waits until the client is connected and subscribed, and
// has published its status, or ctx ends.
func (c *Client) AwaitConnection(ctx context.Context) error {
	for {
		if err := c.cm.AwaitConnection(ctx); err != nil {
			return err
		}
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Topics returns the device's topics.
func (c *Client) Topics() Topics { return c.topics }

// Key returns the device's current identity.
func (c *Client) Key() *did.PrivateKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.key
}

// SetKey replaces the device's identity after a key rotation: later
// commands must name the new DID, and later replies, statuses and events
// are signed with it. The reply to the command that rotated the key is
// still signed with the old one.
func (c *Client) SetKey(k *did.PrivateKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key = k
}

// ConnectedAt returns when the current (or last) connection came up.
func (c *Client) ConnectedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connectedAt
}

// bucketHandover keeps the key handover across restarts.
var bucketHandover = []byte("mqtt-key-handover")

// SetHandover records h, the key handover the old key signed at a key
// rotation, and presents it in every CONNECT from now on (also after a
// restart), so that a broker that pinned the device's name to the old DID
// lets the new one take it (transport/broker).
func (c *Client) SetHandover(h []byte) error {
	err := c.cfg.DB.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketHandover)
		if err != nil {
			return err
		}
		return b.Put([]byte("last"), h)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handover = h
	return nil
}

func (c *Client) keyHandover() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handover
}

// loadHandover reads the handover SetHandover recorded, if any.
func loadHandover(db *bolt.DB) []byte {
	var h []byte
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketHandover); b != nil {
			h = append([]byte(nil), b.Get([]byte("last"))...)
		}
		return nil
	})
	if len(h) == 0 {
		return nil
	}
	return h
}

// Connects counts the connections the client made.
func (c *Client) Connects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connects
}

// Go runs f in a goroutine that Close, Sleep and Abort wait for; ctx ends
// when the client stops. runtime/manage runs its executor so.
func (c *Client) Go(f func(ctx context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.ctx)
	}()
}

// Sleep ends the session cleanly before the device sleeps: it waits for
// the connection if it is not up yet, stops taking new commands (they
// wait in the broker session for the next wake), waits for the commands
// in progress (Delivery.Done), publishes status asleep with nextWake
// (zero for none), waits until every queued reply was acknowledged by the
// broker, and disconnects normally, so the will is not published. ctx
// bounds the whole; on expiry Sleep disconnects anyway and returns
// ctx.Err() (what was not acknowledged is still in bbolt and goes out at
// the next wake).
func (c *Client) Sleep(ctx context.Context, nextWake time.Time) error {
	var nw *time.Time
	if !nextWake.IsZero() {
		t := nextWake.UTC()
		nw = &t
	}
	return c.shutdown(ctx, envelope.StateAsleep, nw)
}

// Close is Sleep for a device that stops with no wake planned: the status
// says stopped.
func (c *Client) Close(ctx context.Context) error { return c.shutdown(ctx, envelope.StateStopped, nil) }

func (c *Client) shutdown(ctx context.Context, s envelope.State, nextWake *time.Time) error {
	// A client that has not connected yet (a short wake) connects first:
	// the broker session must exist, or commands sent while the device
	// sleeps have no one to wait for.
	if err := c.AwaitConnection(ctx); err != nil {
		c.log.Warn("ending a session that never came up", "err", err)
	}
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	err := c.WaitIdle(ctx)
	if err == nil {
		if perr := c.publishStatus(ctx, s, c.clock.Now(), nextWake, 1); perr != nil {
			c.log.Warn("publishing the final status failed", "state", s, "err", perr)
		}
		err = c.Flush(ctx)
	}
	c.log.Debug("session flushed; disconnecting", "state", s, "err", err)
	if derr := c.cm.Disconnect(ctx); derr != nil && err == nil {
		err = derr
	}
	c.stop()
	c.log.Debug("session ended", "state", s)
	return err
}

// Flush waits until the outbound queue is empty and the broker
// acknowledged every publication in the session.
func (c *Client) Flush(ctx context.Context) error {
	for _, ch := range []<-chan struct{}{c.queue.WaitForEmpty(), c.sessions.WaitForEmpty()} {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The queue hands a message to the session before removing it, so
	// the session may have been empty a moment before the last one.
	select {
	case <-c.sessions.WaitForEmpty():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Abort drops the connection without a DISCONNECT, as a power cut would:
// the broker publishes the will and keeps the session, and a command in
// progress records nothing more (Delivery.Complete returns ErrAborted).
// It waits for the client's goroutines (Go), so a handler must return
// when their context ends. For tests and crash drills.
func (c *Client) Abort() {
	c.mu.Lock()
	c.aborted, c.closing = true, true
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.cm.Disconnect(ctx)
	c.stop()
}

func (c *Client) isAborted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// Unacked returns how many publications (replies, mostly) the broker has
// not acknowledged yet; they are in bbolt and are sent again after a
// reconnection, also after a restart.
func (c *Client) Unacked() (int, error) {
	ids, err := c.sessions.List()
	return len(ids), err
}

// QueueDrained returns a channel closed once the outbound queue is empty:
// every queued reply was handed to the MQTT session (written to the
// broker, perhaps not yet acknowledged: see Unacked).
func (c *Client) QueueDrained() <-chan struct{} { return c.queue.WaitForEmpty() }

// stop ends the dispatcher and the goroutines started with Go and waits
// for them.
func (c *Client) stop() {
	c.cancel()
	c.wg.Wait()
}

// Done returns a channel closed when the client has stopped.
func (c *Client) Done() <-chan struct{} { return c.ctx.Done() }

// WaitIdle waits until no command is in progress: every command taken
// from the broker was answered and its outcome committed.
func (c *Client) WaitIdle(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// beginLocked counts a command in progress.
func (c *Client) beginLocked() {
	if c.busy == 0 {
		c.idle = make(chan struct{})
	}
	c.busy++
}

// end uncounts a command in progress.
func (c *Client) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy--
	if c.busy == 0 {
		close(c.idle)
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func newNonce() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// publishPacket serialises a QoS 1 PUBLISH for the outbound queue.
func publishPacket(topic string, payload []byte, ct string, corr []byte, expiry time.Duration) []byte {
	exp := uint32(expiry / time.Second)
	p := &paho.Publish{Topic: topic, QoS: 1, Payload: payload, Properties: &paho.PublishProperties{
		ContentType: ct, CorrelationData: corr, MessageExpiry: &exp}}
	var b bytes.Buffer
	p.Packet().WriteTo(&b)
	return b.Bytes()
}
