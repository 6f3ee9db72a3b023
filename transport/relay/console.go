package relay

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// DefaultOverdueGrace is how late a device's promised wake or pulse may be
// before the console and the per-agent metrics call it overdue, when
// ConsoleConfig.OverdueGrace is zero.
const DefaultOverdueGrace = 5 * time.Minute

// ConsoleConfig configures the fleet console (package console).
type ConsoleConfig struct {
	// Operators are the DIDs that may use it. Empty serves no console
	// (the per-agent metrics still use the view).
	Operators []string
	// Secret signs its session cookies: console.LoadSecret on one relay,
	// the fleet's shared secret on JetStream (cmd/torpor-relay).
	Secret []byte
	// OverdueGrace; zero means DefaultOverdueGrace.
	OverdueGrace time.Duration
	// Refresh is how often the page refreshes its rows; zero means 5 s.
	Refresh time.Duration
}

// newConsole makes the fleet view over the relay's stores and links, and
// the console's HTTP side when operators are configured.
func (s *Relay) newConsole(base *slog.Logger) error {
	cc := s.cfg.Ops.Console
	if cc == nil {
		cc = &ConsoleConfig{}
	}
	grace := cc.OverdueGrace
	if grace == 0 {
		grace = DefaultOverdueGrace
	}
	s.view = &console.Source{States: s.cfg.Stores.States, Queue: s.cfg.Stores.Queue, Up: s.linkUp, Grace: grace,
		Bounds: func(agent string, st agents.State) queuebounds.Bounds { return s.bounds(agent, st) }, Admitted: s.admitted,
		Verified: console.NewVerified(0)}
	var ts console.Tenants
	if s.cfg.Stores.Tenants != nil {
		s.view.Visible, s.view.TenantDevices, ts = s.consoleVisible, s.tenantDevices, consoleTenants{s}
	}
	if len(cc.Operators) == 0 {
		return nil
	}
	var ro console.Rollouts
	if s.rollouts != nil {
		ro = consoleRollouts{s.rollouts}
	}
	c, err := console.New(console.Config{Source: *s.view, Rollouts: ro, PublicURL: s.cfg.PublicURL, Operators: cc.Operators, AlsoOperator: s.consoleTenantOperator, Secret: cc.Secret,
		Spent: s.cfg.Stores.Shared.Spent("login", console.MaxSpentLogins), Refresh: cc.Refresh, Audit: s.cfg.Stores.Audit, Tenants: ts, Clock: s.cfg.Clock, Logger: base.With("component", "console")})
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	s.console = c
	return nil
}
