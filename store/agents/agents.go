package agents

import (
	"context"
	"errors"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/wake"
)

// Errors of a Store.
var (
	// ErrUnknownAgent is returned by Get for an agent that never
	// published a state.
	ErrUnknownAgent = errors.New("agents: unknown agent")
	// ErrNoKeyPackage is returned by TakeKeyPackage when the agent's pool
	// is empty and it has no last-resort KeyPackage.
	ErrNoKeyPackage = errors.New("agents: no key package")
	// ErrPoolFull is returned (wrapped) by Put when the uploaded
	// KeyPackages would grow the pool past MaxKeyPackages.
	ErrPoolFull = errors.New("agents: key package pool full")
)

// MaxKeyPackages caps an agent's KeyPackage pool.
const MaxKeyPackages = 256

// State is what the relay keeps about an agent between its device's
// links: the last state the device published and the bounds in force.
type State struct {
	Mode   wake.Mode
	Window wake.Window
	// NextWake is the next wake the device announced: the one its schedule
	// plans, or one an operator scheduled (zero for none).
	NextWake time.Time
	// Card is the signed Agent Card, served verbatim.
	Card []byte
	// Pulse is the latest signed liveness pulse, served verbatim.
	Pulse []byte
	// Bounds are the queue bounds in force (published in the card).
	Bounds    queuebounds.Bounds
	UpdatedAt time.Time
	// Successor is the DID that replaced this one at a key rotation; ""
	// while the agent is not retired. Retirement is the statement, signed
	// by this DID, that names it (link wire.State.Retirement).
	Successor  string
	Retirement []byte
	// Status is the latest signed status the device published (link
	// wire.State.Status), kept verbatim for the fleet console; nil before
	// the first.
	Status []byte
	// WakeSecond is the second (0–59) of its window's minute at which the
	// relay told the agent's device to open its hourly window
	// (wake.Seconds, sent in the link's state-ok), when WakeSecondSet. It
	// is kept so that the assignment holds across restarts and relays,
	// and goes with the agent at Forget.
	WakeSecond    int
	WakeSecondSet bool
}

// WakeSecondField is how a stored record keeps State's wake second: the
// second plus one, zero for none (so a record stored before it existed
// reads as none).
func WakeSecondField(st State) int {
	if !st.WakeSecondSet {
		return 0
	}
	return st.WakeSecond + 1
}

// SetWakeSecond sets st's wake second from its stored form
// (WakeSecondField); an out-of-range value reads as none.
func SetWakeSecond(st *State, field int) {
	if field >= 1 && field <= 60 {
		st.WakeSecond, st.WakeSecondSet = field-1, true
	}
}

// Store is the relay's per-agent state. The package doc says which
// operations are atomic and how a store shared by many relays keeps them
// so. KeyPackages are MLSMessage-wrapped (RFC 9420, Section 6) and opaque
// to the store. ctx bounds a call to a networked backend; Bolt's calls
// wait on no network and ignore it, as they did before Store existed.
type Store interface {
	// Get returns agent's state, or ErrUnknownAgent.
	Get(ctx context.Context, agent string) (State, error)
	// Agents returns the DIDs of every agent with a state, in no
	// particular order.
	Agents(ctx context.Context) ([]string, error)
	// Put stores agent's state, adds kps to its KeyPackage pool and,
	// unless lastResort is empty, makes lastResort its last-resort
	// KeyPackage, durably and as one operation. It returns an error
	// wrapping ErrPoolFull, and stores nothing, when the pool would exceed
	// MaxKeyPackages.
	Put(ctx context.Context, agent string, st State, kps [][]byte, lastResort []byte) error
	// DropKeyPackages removes from agent's pool every KeyPackage for
	// which drop returns true, durably and as one operation, and returns
	// how many it removed. It only removes: a KeyPackage handed out
	// meanwhile is never brought back. The state and the last-resort
	// KeyPackage are untouched. The relay drops the whole pool when a
	// device replaces it (wire.State.ReplaceKeyPackages), and the pooled
	// KeyPackages that fail its check when the pool is full.
	DropKeyPackages(ctx context.Context, agent string, drop func(kp []byte) bool) (int, error)
	// TakeKeyPackage removes and returns the oldest KeyPackage of agent's
	// pool, durably and atomically: once it returns, no other call (from
	// this relay or another, now or after a restart) hands out the same
	// one. When the pool is empty it returns agent's last-resort
	// KeyPackage, which it keeps, and lastResort true (RFC 9420, Section
	// 16.8: reused so that emptying the pool denies no one a session),
	// without writing. It returns ErrNoKeyPackage when there is neither.
	TakeKeyPackage(ctx context.Context, agent string) (kp []byte, lastResort bool, err error)
	// KeyPackages returns the KeyPackages agent's pool holds, oldest
	// first (never nil), and its last-resort KeyPackage (nil when none).
	KeyPackages(ctx context.Context, agent string) (pool [][]byte, lastResort []byte, err error)
	// Admit records, durably, that an operator admitted agent: it leaves
	// probation (transport/relay). Admitting twice is no error. The
	// admission outlives Forget, so a device forgotten for its silence
	// comes back admitted.
	Admit(ctx context.Context, agent string) error
	// Admitted reports whether agent was admitted.
	Admitted(ctx context.Context, agent string) (bool, error)
	// RecordWake adds w to agent's history of wakes, durably and as one
	// operation (AddWake): it replaces the wake kept at the same instant,
	// else adds w in order of At, and drops the oldest while more than
	// MaxWakes are kept. The history is kept apart from the state: Put
	// leaves it alone.
	RecordWake(ctx context.Context, agent string, w Wake) error
	// Wakes returns agent's history, oldest first (never nil).
	Wakes(ctx context.Context, agent string) ([]Wake, error)
	// Forget removes agent's state, its KeyPackage pool, its last-resort
	// KeyPackage and its history of wakes, durably; an unknown agent is
	// no error. The relay forgets devices silent for too long.
	Forget(ctx context.Context, agent string) error
	// Usage returns how many agents have a state and how many bytes the
	// store takes (the file's pages in use for Bolt; the bucket's for a
	// shared store), for the relay's global caps.
	Usage(ctx context.Context) (Usage, error)
	// Close releases the store.
	Close() error
}

// Walker is a Store that reads every agent's state in bulk: a shared
// store whose Get is a network round trip gives the relay its fleet in a
// few requests instead of one per agent (store/jsstore).
type Walker interface {
	// EachState calls fn with each agent's state, in no particular
	// order, and stops at fn's first error, which it returns.
	EachState(ctx context.Context, fn func(agent string, st State) error) error
}

// EachState calls fn with each agent's state in s: in bulk when s is a
// Walker, else by Agents and one Get per agent (an agent forgotten in
// between is left out).
func EachState(ctx context.Context, s Store, fn func(agent string, st State) error) error {
	if w, ok := s.(Walker); ok {
		return w.EachState(ctx, fn)
	}
	ids, err := s.Agents(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		st, err := s.Get(ctx, id)
		if errors.Is(err, ErrUnknownAgent) {
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(id, st); err != nil {
			return err
		}
	}
	return nil
}

// Usage is what a Store holds in all.
type Usage struct {
	Agents int
	Bytes  int64
}
