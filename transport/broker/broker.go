// Package broker is the MQTT 5 broker torpor-relay embeds
// (github.com/mochi-mqtt/server/v2), so that the relay with no flags is a
// complete deployment. It is a package of its own so that the MQTT test
// helpers (transport/mqtt/mqtttest) start the same broker without linking
// the relay's HTTP side. It knows
// nothing of Torpor's command protocol (transport/mqtt): it only carries
// messages and keeps persistent sessions for devices that sleep.
package broker

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"github.com/mochi-mqtt/server/v2/listeners"
	"go.etcd.io/bbolt"
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
}

// Broker is the embedded MQTT 5 broker (github.com/mochi-mqtt/server/v2)
// that makes torpor-relay with no flags a complete deployment. The MQTT
// command protocol is the operator's (transport/mqtt); the broker only
// carries it.
//
// Anonymous clients are allowed (auth.AllowHook): bind it to loopback, or
// put an authenticating broker behind --mqtt-broker instead.
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
}

// Start starts the embedded broker and returns once it listens.
func Start(cfg Config) (*Broker, error) {
	if cfg.MaxMessageExpiry == 0 {
		cfg.MaxMessageExpiry = DefaultMaxMessageExpiry
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumMessageExpiryInterval = int64(cfg.MaxMessageExpiry / time.Second)
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, InlineClient: true, Logger: log})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	if cfg.DataDir != "" {
		err := srv.AddHook(boltHook{new(bolt.Hook)}, &bolt.Options{
			Path:    filepath.Join(cfg.DataDir, "mqtt.db"),
			Options: &bbolt.Options{Timeout: 5 * time.Second},
		})
		if err != nil {
			return nil, fmt.Errorf("broker: mqtt storage: %w", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	if err := srv.AddListener(listeners.NewNet("tcp", ln)); err != nil {
		ln.Close()
		srv.Close()
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("broker: mqtt: %w", err)
	}
	return &Broker{srv: srv, addr: ln.Addr().String()}, nil
}

// Addr returns the address the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// URL returns the broker's mqtt:// URL.
func (b *Broker) URL() string { return "mqtt://" + b.addr }

// MaxMessageExpiry returns the broker's maximum message expiry interval.
func (b *Broker) MaxMessageExpiry() time.Duration {
	return time.Duration(b.srv.Options.Capabilities.MaximumMessageExpiryInterval) * time.Second
}

// Close stops the broker.
func (b *Broker) Close() error { return b.srv.Close() }

// boltHook is mochi's bbolt storage hook with one defect mended: v2.7.9
// stores in-flight messages (those queued for a sleeping device's
// persistent session) without their packet identifier, so after a restart
// they come back with id 0 and mochi drops every connection of that client
// ("resend inflight: protocol violation: missing packet id") until its
// session expires. The identifier is the last ":"-separated part of the
// stored key (inflightKey in the hook), from which it is restored.
type boltHook struct{ *bolt.Hook }

// StoredInflightMessages implements mqtt.Hook.
func (h boltHook) StoredInflightMessages() ([]storage.Message, error) {
	v, err := h.Hook.StoredInflightMessages()
	for i := range v {
		if v[i].PacketID != 0 {
			continue
		}
		if j := strings.LastIndexByte(v[i].ID, ':'); j >= 0 {
			if n, perr := strconv.ParseUint(v[i].ID[j+1:], 10, 16); perr == nil {
				v[i].PacketID = uint16(n)
			}
		}
	}
	return v, err
}
