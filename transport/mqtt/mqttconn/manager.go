// Package mqttconn keeps an MQTT 5 connection up over paho.golang's
// low-level client (github.com/eclipse/paho.golang/paho): it dials,
// sends CONNECT, reports each connection up and down, reconnects with a
// backoff timed on an injected clock, feeds an outbound queue (the
// interface of github.com/eclipse/paho.golang/autopaho/queue, which
// store/mqttsession implements) to the session, and disconnects cleanly.
//
// It replaces autopaho's ConnectionManager in the agent. autopaho's
// default connection path links a WebSocket client (gorilla/websocket,
// net/http) and an all_proxy dialer (golang.org/x/net/proxy) that Torpor,
// which always dials itself, never uses (docs/footprint.md);
// internal/deptest forbids them in torpor-agent. The behaviour follows
// autopaho v0.23.0's: Clean Start only on the first connection, until one
// succeeds (MQTT 5.0 Section 3.1.2.4); the session state (Config.Client's
// Session) kept across connections, so that paho resends the QoS 1
// publications not yet acknowledged (MQTT 5.0 Section 4.4); the queue's
// messages handed to the session one at a time while connected; a
// DISCONNECT (Config.DisconnectPacket) on Disconnect.
package mqttconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho/queue"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/log"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/torpor-dev/torpor/clock"
)

// ErrConnectionDown is what Publish and Subscribe return while no
// connection is up. Its text is autopaho's ConnectionDownError's.
var ErrConnectionDown = errors.New("connection with the MQTT server is currently down")

// ErrStopped is what AwaitConnection returns once the Manager has stopped.
var ErrStopped = errors.New("connection manager shutting down")

// DefaultConnectTimeout bounds a connection attempt (dial, TLS handshake,
// CONNECT, CONNACK) when Config.Connect.Timeout is zero.
const DefaultConnectTimeout = 10 * time.Second

// Config configures a Manager. Server is required.
type Config struct {
	// Server is the broker's URL: mqtt:// or tcp:// (plain), mqtts://,
	// tls:// or ssl:// (TLS with TLS).
	Server *url.URL
	TLS    *tls.Config
	// Dial opens the network connection to u; nil means Dial. ctx ends
	// when the attempt times out or the Manager stops.
	Dial func(ctx context.Context, u *url.URL) (net.Conn, error)
	// Connect shapes each CONNECT and bounds each connection attempt.
	Connect Connect
	// DisconnectPacket gives the DISCONNECT sent by Disconnect; nil sends
	// reason 0, a nil packet sends none (the connection just closes).
	DisconnectPacket func() *paho.Disconnect
	// Backoff gives the wait before connection attempt n after a
	// connection ends (0 is the first); nil means 10 s but none before
	// attempt 0. It waits on Clock.
	Backoff func(attempt int) time.Duration
	// Clock times Backoff and the pause after a queue error; nil means
	// clock.Real.
	Clock clock.Clock
	// Queue holds messages to publish once connected (paho's QoS 1
	// session keeps them from then on); nil means none.
	Queue queue.Queue
	// Hooks are called as connections come and go.
	Hooks Hooks
	// Logs receive the Manager's and paho's logs.
	Logs Logs
	// Client configures each paho.Client. Its Session is kept across
	// connections; nil means an in-memory one.
	Client paho.ClientConfig
}

// Connect shapes a Manager's CONNECT packets and bounds its connection
// attempts.
type Connect struct {
	// KeepAlive is the CONNECT's Keep Alive in seconds (MQTT 5.0 Section
	// 3.1.2.10).
	KeepAlive uint16
	// CleanStart sets Clean Start on the first connection (until one
	// succeeds); later connections resume the session.
	CleanStart bool
	// SessionExpiry is the Session Expiry Interval in seconds (MQTT 5.0
	// Section 3.1.2.11.2); zero sends none (the session ends with the
	// connection).
	SessionExpiry uint32
	// Timeout bounds one connection attempt; zero means
	// DefaultConnectTimeout. It waits for the network: real time.
	Timeout time.Duration
	// Packet completes each CONNECT (credentials, will); nil sends it as
	// built from the fields above.
	Packet func(*paho.Connect) (*paho.Connect, error)
}

// Hooks are a Manager's callbacks; nil ones are not called.
type Hooks struct {
	// OnConnectionUp is called once each connection is up, before anything
	// from the queue is sent; it must not block.
	OnConnectionUp func(*paho.Connack)
	// OnConnectionDown is called after a connection that was up ends,
	// unless Disconnect ended it; it must not block.
	OnConnectionDown func()
	// OnConnectError is called with the reason of each failed attempt.
	OnConnectError func(error)
}

// Logs are where a Manager logs: Errors and Debug receive the Manager's
// logs, PahoErrors and PahoDebug paho's; nil discards.
type Logs struct {
	Errors, Debug, PahoErrors, PahoDebug log.Logger
}

// Manager keeps one MQTT connection up. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg   Config
	clock clock.Clock
	stop  context.CancelFunc
	done  chan struct{}
	wg    sync.WaitGroup // the queue's goroutine

	mu sync.Mutex
	// mu guards the following fields.
	cli      *paho.Client  // nil while down
	conn     net.Conn      // the current network connection
	connUp   chan struct{} // closed while up (valid while cli is nil)
	connDown chan struct{} // closed once down (valid while cli is set)
}

// Start checks cfg and starts connecting in the background; it does not
// wait. Use AwaitConnection to wait, and Disconnect to stop.
func Start(cfg Config) (*Manager, error) {
	if cfg.Server == nil {
		return nil, errors.New("mqttconn: Config needs Server")
	}
	setDefaults(&cfg)
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, clock: clock.Or(cfg.Clock), stop: cancel, done: make(chan struct{}),
		connUp: make(chan struct{})}
	go m.run(ctx)
	return m, nil
}

func setDefaults(cfg *Config) {
	for _, l := range []*log.Logger{&cfg.Logs.Errors, &cfg.Logs.Debug, &cfg.Logs.PahoErrors, &cfg.Logs.PahoDebug} {
		if *l == nil {
			*l = log.NOOPLogger{}
		}
	}
	if cfg.Backoff == nil {
		cfg.Backoff = ConstantBackoff(10 * time.Second)
	}
	if cfg.Connect.Timeout == 0 {
		cfg.Connect.Timeout = DefaultConnectTimeout
	}
	if cfg.Dial == nil {
		tlsCfg := cfg.TLS
		cfg.Dial = func(ctx context.Context, u *url.URL) (net.Conn, error) { return Dial(ctx, u, tlsCfg) }
	}
	if cfg.Client.Session == nil {
		// One for all connections, or each would start empty and lose
		// the publications in flight.
		cfg.Client.Session = state.NewInMemory()
	}
}

// ConstantBackoff waits d before every attempt but the first.
func ConstantBackoff(d time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			return 0
		}
		return d
	}
}

// run connects, waits for the connection to end, and connects again until
// ctx ends.
func (m *Manager) run(ctx context.Context) {
	defer func() {
		m.wg.Wait()
		close(m.done)
	}()
	first := true
	for {
		cli, ca, lost := m.establish(ctx, first)
		if cli == nil {
			return // stopped
		}
		m.up(cli)
		if m.cfg.Hooks.OnConnectionUp != nil {
			m.cfg.Hooks.OnConnectionUp(ca)
		}
		if first && m.cfg.Queue != nil {
			m.wg.Add(1)
			go m.drainQueue(ctx)
		}
		first = false
		select {
		case err := <-lost:
			m.cfg.Logs.Debug.Printf("mqttconn: connection lost: %v", err)
		case <-ctx.Done():
			m.disconnect(cli)
			m.down()
			return
		}
		<-cli.Done()
		m.down()
		if m.cfg.Hooks.OnConnectionDown != nil {
			m.cfg.Hooks.OnConnectionDown()
		}
	}
}

// disconnect ends cli: a DISCONNECT, or none when DisconnectPacket says
// so (the connection just closes, as a power cut would leave it).
func (m *Manager) disconnect(cli *paho.Client) {
	dp := &paho.Disconnect{ReasonCode: 0}
	if m.cfg.DisconnectPacket != nil {
		dp = m.cfg.DisconnectPacket()
	}
	if dp != nil {
		if err := cli.Disconnect(dp); err != nil {
			m.cfg.Logs.Debug.Printf("mqttconn: DISCONNECT: %v", err)
		}
		return
	}
	m.mu.Lock()
	conn := m.conn
	m.mu.Unlock()
	conn.Close()
	<-cli.Done()
}

func (m *Manager) up(cli *paho.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cli = cli
	m.connDown = make(chan struct{})
	close(m.connUp)
}

func (m *Manager) down() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cli, m.conn = nil, nil
	close(m.connDown)
	m.connUp = make(chan struct{})
}

// client returns the connected client, or nil, and a channel closed when
// that connection ends.
func (m *Manager) client() (*paho.Client, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cli, m.connDown
}

// AwaitConnection waits until a connection is up, ctx ends or the Manager
// stops (ErrStopped).
func (m *Manager) AwaitConnection(ctx context.Context) error {
	m.mu.Lock()
	ch := m.connUp
	m.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-m.done:
		return ErrStopped
	}
}

// Publish publishes p on the current connection (ErrConnectionDown if
// none) and, at QoS 1 or 2, waits for its acknowledgement or ctx.
func (m *Manager) Publish(ctx context.Context, p *paho.Publish) (*paho.PublishResponse, error) {
	cli, _ := m.client()
	if cli == nil {
		return nil, ErrConnectionDown
	}
	return cli.Publish(ctx, p)
}

// Subscribe subscribes on the current connection (ErrConnectionDown if
// none) and waits for the SUBACK or ctx.
func (m *Manager) Subscribe(ctx context.Context, s *paho.Subscribe) (*paho.Suback, error) {
	cli, _ := m.client()
	if cli == nil {
		return nil, ErrConnectionDown
	}
	return cli.Subscribe(ctx, s)
}

// Disconnect stops the Manager: it ends the connection attempts, sends the
// DISCONNECT on a connection that is up, and waits until every goroutine
// of the Manager has returned or ctx ends.
func (m *Manager) Disconnect(ctx context.Context) error {
	m.stop()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done returns a channel closed once the Manager has stopped.
func (m *Manager) Done() <-chan struct{} { return m.done }

// ConnackError is a connection attempt the server refused in its CONNACK.
// Its text is autopaho's.
type ConnackError struct {
	ReasonCode byte   // the CONNACK's reason code (MQTT 5.0 Section 3.2.2.2)
	Reason     string // its Reason String property, if any
	Err        error
}

func (e *ConnackError) Error() string {
	return fmt.Sprintf("server denied connect (reason: %d): %s", e.ReasonCode, e.Err)
}

func (e *ConnackError) Unwrap() error { return e.Err }
