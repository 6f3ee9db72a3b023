package jsstore

import (
	"context"
	"fmt"

	"github.com/torpor-dev/torpor/store/agents"
)

// wakesKey is the key of agent's history of wakes (agents.EncodeWakes),
// apart from its record so that a wake recorded never races a Put.
func wakesKey(agent string) string { return "w." + token(agent) }

// RecordWake implements agents.Store: the history is read, changed
// (agents.AddWake) and written at the revision read (compare-and-swap),
// read again after a lost race.
func (a *Agents) RecordWake(ctx context.Context, agent string, w agents.Wake) error {
	for range maxAttempts {
		h, rev, err := a.wakes(ctx, agent)
		if err != nil {
			return err
		}
		v, err := agents.EncodeWakes(agents.AddWake(h, w))
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = a.c.kv.Create(ctx, wakesKey(agent), v)
		} else {
			_, err = a.c.kv.Update(ctx, wakesKey(agent), v, rev)
		}
		if !isRevisionMismatch(err) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("agents: wakes of %s: %d lost races in a row", agent, maxAttempts)
}

// Wakes implements agents.Store.
func (a *Agents) Wakes(ctx context.Context, agent string) ([]agents.Wake, error) {
	h, _, err := a.wakes(ctx, agent)
	return h, err
}

// wakes reads agent's history and its revision (0 when none).
func (a *Agents) wakes(ctx context.Context, agent string) ([]agents.Wake, uint64, error) {
	e, err := a.c.kv.Get(ctx, wakesKey(agent))
	if isMissing(err) {
		h, _ := agents.DecodeWakes(nil)
		return h, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	h, err := agents.DecodeWakes(e.Value())
	return h, e.Revision(), err
}
