// Package broker is the MQTT 5 broker torpor-relay embeds
// (github.com/mochi-mqtt/server/v2), so that the relay with no flags is a
// complete deployment. It is a package of its own so that the MQTT test
// helpers (transport/mqtt/mqtttest) start the same broker without linking
// the relay's HTTP side. It knows
// nothing of Torpor's command protocol (transport/mqtt): it only carries
// messages and keeps persistent sessions for devices that sleep.
package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
)

// DefaultMaxMessageExpiry is the longest a message may wait in the embedded
// broker for a sleeping device: 30 days. mochi's own default is 24 hours,
// which silently drops operator commands for a device that sleeps longer.
const DefaultMaxMessageExpiry = 30 * 24 * time.Hour

// Config configures the embedded MQTT 5 broker.
type Config struct {
	// Listen is the TCP address, such as "127.0.0.1:1883".
	Listen string
	// DataDir, when set, holds the broker's bbolt file (mqtt.db): sessions,
	// subscriptions and the messages queued for offline clients survive a
	// restart. Empty keeps them in memory.
	DataDir string
	// MaxMessageExpiry caps (and, for messages without one, sets) how long
	// a message waits for its subscriber; zero means
	// DefaultMaxMessageExpiry. Set it above the longest sleep of any device.
	MaxMessageExpiry time.Duration
	// Logger receives the broker's logs; nil discards.
	Logger *slog.Logger

	// Audiences are the URLs clients dial the broker by (mqtt://host:port,
	// mqtts://host:port; see bearer.MQTTAudience for the normalisation):
	// a client's token must name one of them. mqtt://LISTEN-ADDRESS (as
	// bound) is always among them.
	Audiences []string
	// Operators are the DIDs that may publish commands and read statuses,
	// replies and events of every device (AddOperator adds more).
	Operators []did.DID
	// Observers are DIDs that may read every device topic, commands
	// included, and publish nothing (audit, monitoring, tests).
	Observers []did.DID
	// Enrollment fixes device names beforehand.
	Enrollment Enrollment
	// Prefix is the device topics' prefix; empty means DefaultPrefix.
	Prefix string
	// MaxPacketSize bounds every MQTT packet the broker accepts (MQTT 5.0
	// Section 3.2.2.3.6; larger ones end the connection with reason 0x95);
	// zero means DefaultMaxPacketSize.
	MaxPacketSize uint32
	// Clock checks the tokens' times; nil means clock.Real.
	Clock clock.Clock
	// OnCommand, when set, is called with every command an operator
	// publishes on a device's cmd topic, from the broker's first
	// connection on (see ObserveCommands, which changes it later): the
	// relay's audit log misses none.
	OnCommand func(Command)
}

// Enrollment is how device names are bound to DIDs.
type Enrollment struct {
	// Devices pins device names to DIDs beforehand; names not listed are
	// pinned by their first authenticated connection unless Closed is set.
	Devices map[string]did.DID
	// Closed refuses every device name that is neither in Devices nor
	// pinned already.
	Closed bool
	// Tenants, when set, puts devices in tenants (a hosted relay,
	// docs/tenants.md) and scopes operators by them: the operators a
	// tenant's owner named are operators of the tenant's devices only,
	// and Config.Operators and Config.Observers see a tenant's device
	// only when its owner allows it and publish on its topics never
	// (scope.go).
	Tenants Scope
}

// DefaultMaxPacketSize is a little over the 64 KiB payload limit of the
// device protocol (transport/mqtt/envelope.MaxPayload): 4 KiB are left for the
// fixed header, topic and properties. It is the size every Torpor client
// announces (login.MaxPacketSize, which TestMaxPacketSizeAgrees keeps
// equal: the relay does not link paho, which login does), and the one
// torporctl mqtt acl gives an external mosquitto.
const DefaultMaxPacketSize = 64<<10 + 4<<10

// Broker is the embedded MQTT 5 broker (github.com/mochi-mqtt/server/v2)
// that makes torpor-relay with no flags a complete deployment. The MQTT
// command protocol is the operator's (transport/mqtt); the broker only
// carries it.
//
// Every client authenticates with a DID Bearer token and every topic it
// uses is checked (authHook); device names are bound to DIDs (registry).
// A client's packet identifiers are kept apart from the broker's (idSpaces:
// mochi v2.7.9 shares one table between them and loses deliveries).
//
// Redelivery order: mochi resends in-flight QoS 1/2 messages sorted by
// their creation second with an unstable sort, so messages created in the
// same second can come out of order after a reconnect (8 of 20 runs of a
// restart with messages queued). Commands must therefore carry their own
// sequence numbers and be idempotent, or run against an external broker (mosquitto keeps order)
// through --mqtt-broker.
type Broker struct {
	srv  *mqtt.Server
	addr string
	reg  *registry
	auth *authHook
	cmds *commandHook
}

// Start starts the embedded broker and returns once it listens.
func Start(cfg Config) (*Broker, error) {
	if cfg.MaxMessageExpiry == 0 {
		cfg.MaxMessageExpiry = DefaultMaxMessageExpiry
	}
	if cfg.MaxPacketSize == 0 {
		cfg.MaxPacketSize = DefaultMaxPacketSize
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	b := &Broker{addr: ln.Addr().String()}
	if err := b.setup(cfg, log); err != nil {
		ln.Close()
		return nil, err
	}
	if err := b.srv.AddListener(listeners.NewNet("tcp", ln)); err != nil {
		ln.Close()
		b.Close()
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	if err := b.srv.Serve(); err != nil {
		b.Close()
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	return b, nil
}

// sysTopicInterval is how often, in seconds, mochi publishes its $SYS
// topics: its default, every second, stopped the world to read memory
// statistics and wrote a bbolt transaction to mqtt.db, 37 KB a second on
// an idle relay (/proc/PID/io write_bytes), for topics no client may
// subscribe to (authHook). 2^32 seconds is never.
const sysTopicInterval = 1 << 32

// setup creates the server with its hooks: authentication and ACL, the
// packet identifier spaces, session takeovers, then storage.
func (b *Broker) setup(cfg Config, log *slog.Logger) error {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumMessageExpiryInterval = int64(cfg.MaxMessageExpiry / time.Second)
	caps.MaximumPacketSize = cfg.MaxPacketSize
	b.srv = mqtt.New(&mqtt.Options{Capabilities: caps, InlineClient: true, Logger: slog.New(quietHandler{log.Handler()}),
		SysTopicResendInterval: sysTopicInterval})
	regPath := ""
	if cfg.DataDir != "" {
		regPath = filepath.Join(cfg.DataDir, "mqtt-devices.db")
	}
	reg, err := openRegistry(regPath, cfg.Enrollment.Devices, cfg.Enrollment.Closed, log)
	if err != nil {
		return err
	}
	b.reg = reg
	b.auth, err = newAuthHook(cfg, append([]string{b.URL()}, cfg.Audiences...), reg, log)
	if err == nil {
		err = b.srv.AddHook(b.auth, nil)
	}
	ids := newIDSpaces()
	if err == nil {
		err = b.srv.AddHook(ids, nil)
	}
	tk := newTakeovers(b.srv)
	if err == nil {
		err = b.srv.AddHook(tk, nil)
	}
	b.cmds = &commandHook{prefix: cfg.Prefix}
	if cfg.OnCommand != nil {
		b.cmds.on.Store(&cfg.OnCommand)
	}
	if err == nil {
		err = b.srv.AddHook(b.cmds, nil)
	}
	if err == nil && cfg.DataDir != "" {
		path := filepath.Join(cfg.DataDir, "mqtt.db")
		store := boltHook{new(bolt.Hook), ids}
		tk.store = func(cl *mqtt.Client, pk packets.Packet) { store.OnQosPublish(cl, pk, pk.Created, 0) }
		if err = seedSysInfo(path); err == nil {
			err = b.srv.AddHook(store, &bolt.Options{
				Path: path, Bucket: boltBucket,
				Options: &bbolt.Options{Timeout: 5 * time.Second},
			})
		}
	}
	if err != nil {
		b.Close()
		return fmt.Errorf("broker: mqtt: %w", err)
	}
	return nil
}

// AddAudience accepts tokens for one more URL of the broker (a proxy's, a
// host name's; see Config.Audiences).
func (b *Broker) AddAudience(url string) error { return b.auth.addAudience(url) }

// ObserveCommands has f called with every command an operator publishes
// on a device's cmd topic from now on, once the broker accepted it, on
// the publisher's connection goroutine: torpor-relay records them in its
// audit log (transport/relay.CommandAudit). nil stops it.
func (b *Broker) ObserveCommands(f func(Command)) { b.cmds.on.Store(&f) }

// AddObserver lets d read every device topic from its next connection on.
func (b *Broker) AddObserver(d did.DID) { b.auth.addObserver(d) }

// AddOperator lets d publish commands and read every device's statuses,
// replies and events from its next connection on.
func (b *Broker) AddOperator(d did.DID) { b.auth.addOperator(d) }

// Addr returns the address the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// URL returns the broker's mqtt:// URL.
func (b *Broker) URL() string { return "mqtt://" + b.addr }

// MaxMessageExpiry returns the broker's maximum message expiry interval.
func (b *Broker) MaxMessageExpiry() time.Duration {
	return time.Duration(b.srv.Options.Capabilities.MaximumMessageExpiryInterval) * time.Second
}

// Close stops the broker.
func (b *Broker) Close() error {
	err := b.srv.Close()
	if b.reg != nil {
		err = errors.Join(err, b.reg.close())
	}
	return err
}

// boltHook is mochi's bbolt storage hook with two defects mended, and
// messages of a session taken over left to takeovers.
//
// v2.7.9 stores in-flight messages (those queued for a sleeping device's
// persistent session) without their packet identifier, so after a restart
// they come back with id 0 and mochi drops every connection of that client
// ("resend inflight: protocol violation: missing packet id") until its
// session expires. The identifier is the last ":"-separated part of the
// stored key (inflightKey in the hook), from which it is restored.
//
// A client flow moved to an internal identifier (idSpaces) is stored under
// that identifier with the client's own in the entry's Origin (movedTag),
// so that a restarted broker acknowledges it with the client's identifier.
type boltHook struct {
	*bolt.Hook
	ids *idSpaces
}

// OnQosPublish implements mqtt.Hook. A message stored in a client whose
// session was taken over is not stored under it: takeovers moves it to the
// session's new client, which stores it under its own identifier (the
// old one may be an inherited message's, whose record it would overwrite).
func (h boltHook) OnQosPublish(cl *mqtt.Client, pk packets.Packet, sent int64, resends int) {
	if cl.IsTakenOver() && pk.FixedHeader.Type == packets.Publish {
		return
	}
	if clientAck(pk.FixedHeader.Type) {
		if id, ok := h.ids.original(cl.ID, pk.PacketID); ok {
			pk.Origin = movedTag(id)
		}
	}
	h.Hook.OnQosPublish(cl, pk, sent, resends)
}

// StoredInflightMessages implements mqtt.Hook.
func (h boltHook) StoredInflightMessages() ([]storage.Message, error) {
	v, err := h.Hook.StoredInflightMessages()
	for i := range v {
		if v[i].PacketID == 0 {
			if j := strings.LastIndexByte(v[i].ID, ':'); j >= 0 {
				if n, perr := strconv.ParseUint(v[i].ID[j+1:], 10, 16); perr == nil {
					v[i].PacketID = uint16(n)
				}
			}
		}
		if id, ok := movedFrom(v[i].Origin); ok && clientAck(v[i].FixedHeader.Type) && v[i].PacketID != 0 {
			h.ids.restore(v[i].Client, v[i].PacketID, id)
			v[i].Origin = ""
		}
	}
	return v, err
}
