package main

import (
	"os"

	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// consoleConfig returns the fleet console's configuration: served to the
// operators of --operator and --operators-file when there are any, its
// session key in the data directory (console.SecretFile; each relay of a
// fleet keeps its own).
func (a *args) consoleConfig() (*relay.ConsoleConfig, error) {
	cc := &relay.ConsoleConfig{OverdueGrace: a.overdueGrace}
	ops, err := a.mqtt.operatorDIDs()
	if err != nil || len(ops) == 0 {
		return cc, err
	}
	for _, o := range ops {
		cc.Operators = append(cc.Operators, o.String())
	}
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return nil, err
	}
	if cc.Secret, err = console.LoadSecret(a.dataDir); err != nil {
		return nil, err
	}
	return cc, nil
}
