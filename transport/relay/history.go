package relay

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// drained counts, per agent, the records its device acknowledged over
// the links not ended yet; a link's end adds them to the newest wake of
// the agent's history (agents.Wake.Drained). It also keeps when each
// link came up: the start of a wake whose status does not say.
type drained struct {
	mu    sync.Mutex
	n     map[string]int
	since map[string]time.Time
}

func (d *drained) add(agent string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[agent] += n
}

func (d *drained) take(agent string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.n[agent]
	delete(d.n, agent)
	delete(d.since, agent)
	return n
}

// linked notes that agent's link came up at t.
func (d *drained) linked(agent string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.since == nil {
		d.since = map[string]time.Time{}
	}
	d.since[agent] = t
}

// linkedAt is when agent's link came up, or now when this relay does not
// know.
func (d *drained) linkedAt(agent string, now time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.since[agent]; ok {
		return t
	}
	return now
}

// acked is the link server's OnAcked: the drain latency for /metrics and
// the count for the history.
func (s *Relay) acked(agent did.DID, waited []time.Duration) {
	s.metrics.acked(agent, waited)
	s.drained.add(agent.String(), len(waited))
}

// linkEnded is the link server's OnUnacked, called when a link ends after
// its last acknowledgement: the deferred senders, and the records drained
// over it added to the newest wake of the history.
func (s *Relay) linkEnded(agent did.DID, bySender map[string]int) {
	s.deferred.linkEnded(agent, bySender)
	n := s.drained.take(agent.String())
	if n == 0 {
		return
	}
	ctx := context.Background()
	h, err := s.cfg.Stores.States.Wakes(ctx, agent.String())
	if err != nil || len(h) == 0 {
		s.logHistory(agent.String(), err)
		return
	}
	w := h[len(h)-1]
	w.Drained += n
	s.logHistory(agent.String(), s.cfg.Stores.States.RecordWake(ctx, agent.String(), w))
}

// recordWake adds the wake a published state tells of to agent's history
// (agents.Store.RecordWake): at the start its signed status gives
// (wire.Status.Wake), else when its link came up, with the queue depth now and the windows
// prev's schedule promised that did not come (console.Missed). A state
// published again within the same wake adds nothing. The awake time of
// the wake before, which the status reports now (wire.Status.LastWake), is
// set on its entry. A failure is logged: the history is for operators
// and does not refuse a state.
func (s *Relay) recordWake(ctx context.Context, agent did.DID, prev agents.State, known bool, st wire.State) {
	id, now := agent.String(), s.clk.Now()
	h, err := s.cfg.Stores.States.Wakes(ctx, id)
	if err != nil {
		s.logHistory(id, err)
		return
	}
	w := agents.Wake{At: s.drained.linkedAt(id, now).UTC(), Relay: s.cfg.PublicURL}
	if ws, err := ParseStatus(st.Status, agent); st.Status != nil && err == nil {
		if lw := ws.LastWake; lw != nil && lw.AwakeMs > 0 {
			if i := wakeAt(h, lw.At); i >= 0 && h[i].AwakeMs != lw.AwakeMs {
				h[i].AwakeMs = lw.AwakeMs
				s.logHistory(id, s.cfg.Stores.States.RecordWake(ctx, id, h[i]))
			}
		}
		if ws.Wake != nil {
			w.At, w.Reason = ws.Wake.At.UTC(), ws.Wake.Reason
		}
	}
	if wakeAt(h, w.At) >= 0 {
		return
	}
	qs, err := s.cfg.Stores.Queue.Stats(ctx, id, now)
	if err != nil {
		s.logHistory(id, err)
		return
	}
	w.QueueDepth = qs.Messages
	if known {
		w.Missed = console.Missed(prev, now)
	}
	s.logHistory(id, s.cfg.Stores.States.RecordWake(ctx, id, w))
}

// wakeAt is the index of the wake of h at t, or -1.
func wakeAt(h []agents.Wake, t time.Time) int {
	return slices.IndexFunc(h, func(w agents.Wake) bool { return w.At.Equal(t) })
}

func (s *Relay) logHistory(agent string, err error) {
	if err != nil {
		s.log.Warn("history of wakes not recorded", "agent", agent, "err", err)
	}
}
