package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/relaystore"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/broker"
	"github.com/torpor-dev/torpor/transport/relay"
)

// mqttArgs are the flags of the MQTT broker.
type mqttArgs struct {
	listen, external           string
	maxExpiry                  time.Duration
	operators, audiences       []string
	operatorsFile, devicesFile string
}

func (m *mqttArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&m.listen, "mqtt-listen", "127.0.0.1:1883", "The address of the embedded MQTT 5 broker. Every client authenticates with a DID Bearer token (docs/security.md).")
	fs.StringVar(&m.external, "mqtt-broker", "", "The URL of an external MQTT 5 broker (mqtt://host:port). When set, no embedded broker starts and devices and operators are pointed at this one; see torporctl mqtt acl.")
	fs.DurationVar(&m.maxExpiry, "mqtt-max-expiry", broker.DefaultMaxMessageExpiry, "How long the embedded broker keeps a message for an offline subscriber. Set it above the longest sleep of any device.")
	fs.Func("operator", "An operator DID: the embedded broker lets it publish commands and read every device's statuses and replies, and the relay lets it use the fleet console at /fleet, list and purge devices' queues (torporctl queue) and admit devices (torporctl device admit). Repeat the flag for more.", func(s string) error {
		m.operators = append(m.operators, s)
		return nil
	})
	fs.StringVar(&m.operatorsFile, "operators-file", "", "A file of operator DIDs, one a line ('#' comments), added to --operator.")
	fs.StringVar(&m.devicesFile, "mqtt-devices-file", "", "A file of \"NAME DID\" lines: the only devices the embedded broker admits. Without it, a device name is pinned to the DID of its first authenticated connection.")
	fs.Func("mqtt-public-url", "A URL devices and operators dial the embedded broker by, such as mqtt://relay.example:1883 (repeat for more); their tokens must name one. mqtt://<mqtt-listen> is always accepted.", func(s string) error {
		m.audiences = append(m.audiences, s)
		return nil
	})
}

// operatorDIDs returns the DIDs of --operator and --operators-file: the
// embedded broker's operators, and those who may use the fleet console,
// list and purge a device's queue and admit devices (transport/relay,
// Config.Access.Operators and Config.Ops.Console).
func (m *mqttArgs) operatorDIDs() ([]did.DID, error) {
	var ops []did.DID
	for _, s := range m.operators {
		d, err := did.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--operator: %w", err)
		}
		ops = append(ops, d)
	}
	if m.operatorsFile != "" {
		ds, err := broker.ReadDIDs(m.operatorsFile)
		if err != nil {
			return nil, fmt.Errorf("--operators-file: %w", err)
		}
		ops = append(ops, ds...)
	}
	return ops, nil
}

// brokerConfig returns the embedded broker's configuration.
func (m *mqttArgs) brokerConfig(dataDir string, log *slog.Logger) (broker.Config, error) {
	cfg := broker.Config{Listen: m.listen, DataDir: dataDir, MaxMessageExpiry: m.maxExpiry, Audiences: m.audiences, Logger: log}
	ops, err := m.operatorDIDs()
	if err != nil {
		return cfg, err
	}
	cfg.Operators = ops
	if m.devicesFile != "" {
		devs, err := broker.ReadDevices(m.devicesFile)
		if err != nil {
			return cfg, fmt.Errorf("--mqtt-devices-file: %w", err)
		}
		cfg.Enrollment = broker.Enrollment{Devices: devs, Closed: true}
	}
	return cfg, nil
}

// startBroker starts the embedded MQTT broker unless --mqtt-broker names an
// external one. It returns the URL devices and operators use and a function
// that stops the embedded broker, which gives onCommand every command it
// carries (relay.CommandAudit) from its start on. With a tenants ledger
// (--tenants) the broker's ACL is scoped by tenant (ledgerScope).
func startBroker(a *args, log *slog.Logger, onCommand func(relay.MQTTCommand), ledger tenants.Store) (string, func(), error) {
	if a.mqtt.external != "" {
		return a.mqtt.external, func() {}, nil
	}
	cfg, err := a.mqtt.brokerConfig(a.dataDir, log.With("component", "mqtt"))
	if err != nil {
		return "", nil, err
	}
	// The broker keeps mqtt.db and mqtt-devices.db in --data-dir. On bolt
	// the stores opened before it created the directory (store.Open); on
	// JetStream nothing else did.
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return "", nil, fmt.Errorf("--data-dir %s: the embedded MQTT broker keeps its files there: %w", a.dataDir, err)
	}
	cfg.OnCommand = func(c broker.Command) { onCommand(relay.MQTTCommand(c)) }
	if ledger != nil {
		cfg.Enrollment.Tenants = ledgerScope{ledger}
	}
	b, err := broker.Start(cfg)
	if err != nil {
		return "", nil, relaystore.BrokerFix(filepath.Join(a.dataDir, "mqtt.db"), a.store.kind != "jetstream", err)
	}
	if len(cfg.Operators) == 0 {
		log.Warn("no MQTT operator configured (--operator, --operators-file): devices can connect, but nobody may send them commands")
	}
	if !isLoopback(b.Addr()) && len(cfg.Audiences) == 0 {
		log.Warn("the embedded MQTT broker listens beyond loopback; pass --mqtt-public-url with the URL clients dial, or their tokens are refused", "addr", b.Addr())
	}
	return b.URL(), func() { b.Close() }, nil
}

// ledgerScope is the tenants ledger as the embedded broker's Scope
// (docs/tenants.md, docs/mqtt.md "Tenants"): a device's tenant, the
// operators its owner's signed list names and whether it lets the host
// see the tenant's devices, read from the ledger at each check.
type ledgerScope struct{ l tenants.Store }

// DeviceTenant implements broker.Scope.
func (s ledgerScope) DeviceTenant(dev did.DID) (broker.TenantView, bool, error) {
	owner, in, err := s.l.TenantOf(dev)
	if err != nil || !in {
		return broker.TenantView{}, false, err
	}
	info, err := s.l.Tenant(owner)
	if err != nil {
		return broker.TenantView{}, false, fmt.Errorf("the tenant of %s: %w", dev, err)
	}
	v := broker.TenantView{HostSeesDevices: info.HostSeesDevices}
	for _, op := range info.Operators {
		d, err := did.Parse(op)
		if err != nil {
			return broker.TenantView{}, false, fmt.Errorf("tenant %s: operator %q: %w", owner, op, err)
		}
		v.Operators = append(v.Operators, d)
	}
	return v, true, nil
}

// IsTenantOperator implements broker.Scope.
func (s ledgerScope) IsTenantOperator(d did.DID) (bool, error) {
	ts, err := s.l.OperatorTenants(d)
	return len(ts) > 0, err
}
