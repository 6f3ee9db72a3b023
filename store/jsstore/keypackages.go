package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/store/agents"
)

// Put implements agents.Store: the KeyPackages are written under new
// keys, then the record naming them replaces the one read, by
// compare-and-swap; when the pool would grow past agents.MaxKeyPackages
// or the write fails, the new keys are deleted again.
func (a *Agents) Put(ctx context.Context, agent string, st agents.State, kps [][]byte, lastResort []byte) error {
	var ids []string
	for _, kp := range kps {
		id := newID()
		if _, err := a.c.kv.Put(ctx, kpKey(agent, id), kp); err != nil {
			a.deleteKPs(ctx, agent, ids)
			return fmt.Errorf("agents: storing a KeyPackage of %s: %w", agent, err)
		}
		ids = append(ids, id)
	}
	err := a.update(ctx, agent, func(r *agentRecord) error {
		if n := len(r.Pool); n+len(ids) > agents.MaxKeyPackages {
			return fmt.Errorf("%w: %d held + %d uploaded > %d", agents.ErrPoolFull, n, len(ids), agents.MaxKeyPackages)
		}
		r.setState(st)
		r.Pool = append(r.Pool, ids...)
		if len(lastResort) > 0 {
			r.LastResort = lastResort
		}
		return nil
	})
	if err != nil {
		a.deleteKPs(context.WithoutCancel(ctx), agent, ids)
	}
	return err
}

// update applies change to agent's record and writes it by
// compare-and-swap, reading again after a lost race; change's error
// stops it without writing.
func (a *Agents) update(ctx context.Context, agent string, change func(*agentRecord) error) error {
	for range maxAttempts {
		r, rev, _, err := a.get(ctx, agent)
		if err != nil {
			return err
		}
		if err := change(&r); err != nil {
			return err
		}
		if err := a.put(ctx, agent, &r, rev); !errors.Is(err, errConflict) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("agents: %s: %d lost races in a row", agent, maxAttempts)
}

func (a *Agents) deleteKPs(ctx context.Context, agent string, ids []string) {
	for _, id := range ids {
		_ = a.c.kv.Purge(ctx, kpKey(agent, id))
	}
}

// TakeKeyPackage implements agents.Store. The oldest pooled KeyPackage is
// read, then its id is removed from the agent's record by
// compare-and-swap: of concurrent takes (on any relay) that read the same
// record, one writes and the others read again and take the next. Its key
// is deleted after. With an empty pool the last-resort KeyPackage is
// returned without a write.
func (a *Agents) TakeKeyPackage(ctx context.Context, agent string) ([]byte, bool, error) {
	for range maxAttempts {
		r, rev, _, err := a.get(ctx, agent)
		if err != nil {
			return nil, false, err
		}
		if len(r.Pool) == 0 {
			if r.LastResort == nil {
				return nil, false, agents.ErrNoKeyPackage
			}
			return r.LastResort, true, nil
		}
		id := r.Pool[0]
		e, err := a.c.kv.Get(ctx, kpKey(agent, id))
		if err != nil && !isMissing(err) {
			return nil, false, err
		}
		r.Pool = r.Pool[1:]
		switch err := a.put(ctx, agent, &r, rev); {
		case errors.Is(err, errConflict):
			continue
		case err != nil:
			return nil, false, err
		}
		a.deleteKPs(ctx, agent, []string{id})
		if e != nil {
			return e.Value(), false, nil
		}
		// The id named no key (lost to a failure): it is gone from the
		// pool now; take the next.
	}
	return nil, false, fmt.Errorf("agents: %s: %d lost races in a row", agent, maxAttempts)
}

// KeyPackages implements agents.Store.
func (a *Agents) KeyPackages(ctx context.Context, agent string) ([][]byte, []byte, error) {
	r, _, _, err := a.get(ctx, agent)
	if err != nil {
		return nil, nil, err
	}
	pool := [][]byte{}
	for _, id := range r.Pool {
		e, err := a.c.kv.Get(ctx, kpKey(agent, id))
		if isMissing(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		pool = append(pool, e.Value())
	}
	return pool, r.LastResort, nil
}
