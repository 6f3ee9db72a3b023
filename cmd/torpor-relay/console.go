package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// consoleConfig returns the fleet console's configuration: served to the
// operators of --operator and --operators-file when there are any, its
// session key in the data directory (console.SecretFile) on one relay, and
// on JetStream the fleet's one key (store/shared), so that a session
// opened at one relay is good at every other.
func (a *args) consoleConfig(st *backend) (*relay.ConsoleConfig, error) {
	cc := &relay.ConsoleConfig{OverdueGrace: a.overdueGrace}
	ops, err := a.mqtt.operatorDIDs()
	if err != nil || len(ops) == 0 {
		return cc, err
	}
	for _, o := range ops {
		cc.Operators = append(cc.Operators, o.String())
	}
	if st.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedSecretWait)
		defer cancel()
		if cc.Secret, err = st.shared.Secret(ctx, consoleSecret); err != nil {
			return nil, fmt.Errorf("the console's session key: %w", err)
		}
		return cc, nil
	}
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return nil, err
	}
	if cc.Secret, err = console.LoadSecret(a.dataDir); err != nil {
		return nil, err
	}
	return cc, nil
}

// consoleSecret names the console's session key among the fleet's shared
// secrets; sharedSecretWait bounds reading or creating it at start.
const (
	consoleSecret    = "console-session"
	sharedSecretWait = 30 * time.Second
)
