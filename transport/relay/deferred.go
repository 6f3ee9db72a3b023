package relay

import (
	"sync"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/queue"
)

// deferredSenders is, per agent, the senders whose records the device
// left unacknowledged on its last link (link server.OnUnacked): records it
// deferred, such as MLS messages for a group it never joined, which anyone
// can make without a key. Such a sender's next handshake record is queued
// as an ordinary message: its junk costs its own allowance (MaxPerPeer,
// MaxPeerBytes) and never the handshake reserve other senders' Welcomes
// and Commits need. The memory is per relay process and is replaced at
// each link's end; a sender whose records the device then acknowledges
// has the reserve again.
type deferredSenders struct {
	mu sync.Mutex
	m  map[string]map[string]int // agent -> sender -> records left
}

// linkEnded replaces agent's senders with those its last link left.
func (d *deferredSenders) linkEnded(agent did.DID, bySender map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]map[string]int{}
	}
	if len(bySender) == 0 {
		delete(d.m, agent.String())
		return
	}
	d.m[agent.String()] = bySender
}

// kind is the kind a record of sender to agent is queued as: a handshake
// from a sender the device left records of is an ordinary message.
func (d *deferredSenders) kind(agent, sender string, k queue.Kind) queue.Kind {
	if k != queue.KindHandshake {
		return k
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[agent][sender] > 0 {
		return queue.KindMessage
	}
	return k
}
