package runtime

import (
	"github.com/torpor-dev/torpor/session"
)

// ErrNotPrivate is returned (wrapped) by Run when the agent's bbolt file
// may be read by anyone but its owner, or its directory written by anyone
// but its owner. It is session.ErrNotPrivate: the agent and the sender
// hold their stores to one rule.
var ErrNotPrivate = session.ErrNotPrivate
