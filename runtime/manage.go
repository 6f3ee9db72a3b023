package runtime

import (
	"context"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Management is a management channel that follows the duty cycle: an
// operator's session (manage.Commands over MQTT) is up while the agent is
// awake and ended cleanly before it sleeps, so that commands sent while it
// sleeps wait in the broker for the next wake. runtime/manage's *Commands
// implements it.
//
// The agent calls Awake when a wake begins, beside its first phases (link,
// pulse, KeyPackages, outbox), and Asleep once the wake's work is done and
// the next wake was announced to the relay, before it closes the link and
// arms the wake source. When Run ends (a shutdown, a restart), it calls
// Close instead of Asleep, before it closes its bbolt file, which the
// channel may use.
type Management interface {
	// Awake starts the channel for a wake. It must not block for long:
	// the wake's first phases wait for it. ctx ends with the wake.
	Awake(ctx context.Context)
	// Asleep ends the channel before the agent sleeps until next (zero:
	// until an event). It may block, but should bound itself: the agent
	// sleeps only after it returned.
	Asleep(ctx context.Context, next time.Time)
	// Close ends the channel for good (status stopped), within ctx. It is
	// safe to call more than once.
	Close(ctx context.Context) error
}

// closeTimeout bounds Management.Close when Run ends: a network wait, on
// the unscaled clock.
const closeTimeout = 10 * time.Second

// SetManagement makes m follow the agent's duty cycle from the next wake,
// in place of Config.Management. It exists because a management channel
// such as manage.Commands is made from the Agent it manages, after New:
//
//	a, _ := runtime.New(cfg)
//	cmds, _ := manage.NewCommands(a, ccfg)
//	a.SetManagement(cmds)
//	err := a.Run(ctx) // ends with cmds.Close: status stopped
func (a *Agent) SetManagement(m Management) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mgmt = m
}

func (a *Agent) management() Management {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mgmt
}

// closeManagement ends the management channel when Run ends.
func (a *Agent) closeManagement() {
	m := a.management()
	if m == nil {
		return
	}
	ctx, cancel := clock.WithTimeout(context.Background(), clock.Unscaled(a.clock), closeTimeout)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		a.log.Warn("closing the management channel", "err", err)
	}
}
