package jsstore

import (
	"errors"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
)

// OwnQueue returns c's queue store, as Queue does, but one whose Close
// closes c too: for a caller that opens a connection for each store it
// uses (the conformance runner, the contract suites).
func (c *Conn) OwnQueue() queue.Store { return ownedQueue{c.Queue(), c} }

// OwnAgents returns c's agent store, as Agents does, but one whose Close
// closes c too.
func (c *Conn) OwnAgents() agents.Store { return ownedAgents{c.Agents(), c} }

type ownedQueue struct {
	*Queue
	c *Conn
}

func (q ownedQueue) Close() error { return errors.Join(q.Queue.Close(), q.c.Close()) }

// ownedAgents holds the store as an agents.Store: a field *Agents would
// hide the interface's method of that name.
type ownedAgents struct {
	agents.Store
	c *Conn
}

func (a ownedAgents) Close() error { return errors.Join(a.Store.Close(), a.c.Close()) }
