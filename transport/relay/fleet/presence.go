package fleet

import (
	"context"
	"hash/maphash"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// presenceWorkers write the presence keys, each agent's always by the same
// worker, so that the writes of one agent's key keep the order of its
// links' ups and downs.
const presenceWorkers = 4

// presenceWriteTimeout bounds one write of a presence key; a write that
// fails is made again at the next refresh.
const presenceWriteTimeout = 5 * time.Second

var presenceSeed = maphash.MakeSeed()

// UsePresence makes the fleet keep p's key for every link this relay holds
// (written when the link comes up, again every refresh, removed when it
// goes) and answer Up from p's view. refresh is how often the keys are
// written again: shorter than their TTL (jsstore.LinkKeyRefresh). Call it
// before Serve; Close stops its work.
func (f *Fleet) UsePresence(p Presence, refresh time.Duration) {
	f.presence = p
	f.keyed = map[string]bool{}
	for range presenceWorkers {
		ch := make(chan string, 256)
		f.writes = append(f.writes, ch)
		go f.writePresence(ch)
	}
	go f.refreshPresence(refresh)
}

// Close stops the presence work of UsePresence, removing the keys this
// relay wrote (within presenceWriteTimeout in all): a relay stopped
// without removing them leaves them to their TTL.
func (f *Fleet) Close() {
	f.mu.Lock()
	select {
	case <-f.done:
		f.mu.Unlock()
		return
	default:
		close(f.done)
	}
	keyed := make([]string, 0, len(f.keyed))
	for a := range f.keyed {
		keyed = append(keyed, a)
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), presenceWriteTimeout)
	defer cancel()
	for _, a := range keyed {
		if err := f.presence.Release(ctx, a); err != nil {
			f.log.Warn("fleet: removing a link's presence key at stop", "agent", a, "err", err)
		}
	}
}

// queuePresence has agent's key brought in line with this relay's links:
// written while it holds one, removed when it does not.
func (f *Fleet) queuePresence(agent string) {
	select {
	case f.writes[maphash.String(presenceSeed, agent)%presenceWorkers] <- agent:
	case <-f.done:
	}
}

// writePresence writes the keys of the agents it is given until Close.
func (f *Fleet) writePresence(ch chan string) {
	for {
		select {
		case <-f.done:
			return
		case agent := <-ch:
			f.writeKey(agent)
		}
	}
}

// writeKey writes agent's key when this relay holds its link, else
// removes the key it wrote. The first write for a link starts the link's
// pending notice (noticeLater): a relay whose view lacked the key when it
// decided not to announce a record asked before this write was stored.
func (f *Fleet) writeKey(agent string) {
	f.mu.Lock()
	h, keyed := f.held[agent], f.keyed[agent]
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), presenceWriteTimeout)
	defer cancel()
	switch {
	case h != nil:
		err := f.presence.Hold(ctx, agent)
		if err != nil {
			f.log.Warn("fleet: writing a link's presence key", "agent", agent, "err", err)
		}
		f.mu.Lock()
		f.keyed[agent] = f.keyed[agent] || err == nil
		first := !h.noticed
		h.noticed = true
		f.mu.Unlock()
		if first {
			go f.noticeLater(h.ctx, agent)
		}
	case keyed:
		if err := f.presence.Release(ctx, agent); err != nil {
			f.log.Warn("fleet: removing a link's presence key", "agent", agent, "err", err)
			return
		}
		f.mu.Lock()
		if f.held[agent] == nil {
			delete(f.keyed, agent)
		}
		f.mu.Unlock()
	}
}

// refreshPresence writes the keys of the links this relay holds again
// every refresh, and removes again those whose removal failed, until
// Close. The wait is a network's TTL, on the unscaled clock.
func (f *Fleet) refreshPresence(refresh time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.done; cancel() }()
	for clock.Sleep(ctx, clock.Unscaled(f.clk), refresh) == nil {
		f.mu.Lock()
		agents := make([]string, 0, len(f.held)+len(f.keyed))
		for a := range f.held {
			agents = append(agents, a)
		}
		for a := range f.keyed {
			if f.held[a] == nil {
				agents = append(agents, a)
			}
		}
		f.mu.Unlock()
		for _, a := range agents {
			f.queuePresence(a)
		}
	}
}
