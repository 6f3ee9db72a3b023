package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// State errors.
var (
	// ErrUnknownAgent is returned by States.Get for an agent that never
	// published a state.
	ErrUnknownAgent = errors.New("relay: unknown agent")
	// ErrNoKeyPackage is returned by States.TakeKeyPackage when the
	// agent's pool is empty.
	ErrNoKeyPackage = errors.New("relay: no key package")
	// ErrPoolFull is returned (wrapped) by States.Put when the uploaded
	// KeyPackages would grow the pool past MaxKeyPackages.
	ErrPoolFull = errors.New("relay: key package pool full")
)

// MaxKeyPackages caps an agent's KeyPackage pool.
const MaxKeyPackages = 256

// AgentState is what the relay keeps about an agent between its device's
// links: the last state the device published and the bounds in force.
type AgentState struct {
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
	Bounds    queue.Bounds
	UpdatedAt time.Time
}

// stateRecord is AgentState on disk: a version byte (1) then this CBOR map.
type stateRecord struct {
	Mode         string   `cbor:"1,keyasint"`
	WindowMinute int      `cbor:"2,keyasint"`
	WindowLen    int64    `cbor:"3,keyasint"` // ns
	WindowOffset int64    `cbor:"4,keyasint"` // ns
	NextWake     int64    `cbor:"5,keyasint,omitempty"`
	Card         []byte   `cbor:"6,keyasint,omitempty"`
	Pulse        []byte   `cbor:"7,keyasint,omitempty"`
	Bounds       [7]int64 `cbor:"8,keyasint"`
	UpdatedAt    int64    `cbor:"9,keyasint"`
}

const stateVersion = 1

func encodeState(s AgentState) ([]byte, error) {
	r := stateRecord{
		Mode: string(s.Mode), WindowMinute: s.Window.Minute, WindowLen: int64(s.Window.Length), WindowOffset: int64(s.Window.Offset),
		Card: s.Card, Pulse: s.Pulse, UpdatedAt: s.UpdatedAt.UnixNano(),
		Bounds: [7]int64{int64(s.Bounds.MaxMessages), int64(s.Bounds.MaxPerPeer), s.Bounds.MaxBytes, s.Bounds.MaxMessageSize, int64(s.Bounds.TTL), int64(s.Bounds.HandshakeMessages), s.Bounds.HandshakeBytes},
	}
	if !s.NextWake.IsZero() {
		r.NextWake = s.NextWake.UnixNano()
	}
	b, err := cbor.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append([]byte{stateVersion}, b...), nil
}

func decodeState(b []byte) (AgentState, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return AgentState{}, fmt.Errorf("relay: agent state: unknown layout version")
	}
	var r stateRecord
	if err := cbor.Unmarshal(b[1:], &r); err != nil {
		return AgentState{}, fmt.Errorf("relay: agent state: %v", err)
	}
	s := AgentState{
		Mode:   wake.Mode(r.Mode),
		Window: wake.Window{Minute: r.WindowMinute, Length: time.Duration(r.WindowLen), Offset: time.Duration(r.WindowOffset)},
		Card:   r.Card, Pulse: r.Pulse, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC(),
		Bounds: queue.Bounds{MaxMessages: int(r.Bounds[0]), MaxPerPeer: int(r.Bounds[1]), MaxBytes: r.Bounds[2], MaxMessageSize: r.Bounds[3], TTL: time.Duration(r.Bounds[4]), HandshakeMessages: int(r.Bounds[5]), HandshakeBytes: r.Bounds[6]},
	}
	if r.NextWake != 0 {
		s.NextWake = time.Unix(0, r.NextWake).UTC()
	}
	return s, nil
}

// States is the relay's durable per-agent state in bbolt: the published
// state and the KeyPackage pool. Layout:
//
//	bucket "agents"  <agent DID> -> 0x01 || CBOR stateRecord
//	bucket "kp"      bucket <agent DID>  <seq: uint64 BE> -> KeyPackage (MLSMessage bytes)
//	bucket "kp-lr"   <agent DID> -> last-resort KeyPackage (MLSMessage bytes)
//
// A KeyPackage of the pool is deleted in the same transaction that reads
// it, so each is handed out once, also across restarts. The last-resort
// KeyPackage (RFC 9420, Section 16.8) is never deleted by a fetch; the
// device replaces it.
type States struct {
	db  *bolt.DB
	own bool
}

var (
	bucketAgents = []byte("agents")
	bucketKP     = []byte("kp")
	bucketLR     = []byte("kp-lr")
)

// OpenStates opens (creating) the state file at path.
func OpenStates(path string, o *store.Options) (*States, error) {
	db, err := store.Open(path, o)
	if err != nil {
		return nil, err
	}
	s, err := NewStates(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// NewStates keeps agent state in db, which the caller closes.
func NewStates(db *bolt.DB) (*States, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketAgents, bucketKP, bucketLR} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("relay: %w", store.Err(err))
	}
	return &States{db: db}, nil
}

// Close closes the file if OpenStates opened it.
func (s *States) Close() error {
	if s.own {
		return s.db.Close()
	}
	return nil
}

// Get returns agent's state, or ErrUnknownAgent.
func (s *States) Get(agent string) (AgentState, error) {
	var st AgentState
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAgents).Get([]byte(agent))
		if b == nil {
			return ErrUnknownAgent
		}
		var err error
		st, err = decodeState(b)
		return err
	})
	return st, err
}

// Agents returns the DIDs of every agent with a state.
func (s *States) Agents() ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAgents).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// Put stores agent's state, adds kps to its KeyPackage pool and, unless
// lastResort is empty, makes lastResort its last-resort KeyPackage, in one
// fsync'd transaction. It returns an error wrapping ErrPoolFull, and stores
// nothing, when the pool would exceed MaxKeyPackages.
func (s *States) Put(agent string, st AgentState, kps [][]byte, lastResort []byte) error {
	val, err := encodeState(st)
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		pool, err := tx.Bucket(bucketKP).CreateBucketIfNotExists([]byte(agent))
		if err != nil {
			return err
		}
		if n := pool.Stats().KeyN; n+len(kps) > MaxKeyPackages {
			return fmt.Errorf("%w: %d held + %d uploaded > %d", ErrPoolFull, n, len(kps), MaxKeyPackages)
		}
		for _, kp := range kps {
			seq, _ := pool.NextSequence()
			if err := pool.Put(binary.BigEndian.AppendUint64(nil, seq), kp); err != nil {
				return err
			}
		}
		if len(lastResort) > 0 {
			if err := tx.Bucket(bucketLR).Put([]byte(agent), lastResort); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketAgents).Put([]byte(agent), val)
	})
	return store.Err(err)
}

// TakeKeyPackage removes and returns the oldest KeyPackage of agent's
// pool, durably: once it returns, no later call (nor a restarted relay)
// hands out the same one. When the pool is empty it returns the agent's
// last-resort KeyPackage, which it keeps, and lastResort true (RFC 9420,
// Section 16.8: reused so that emptying the pool denies no one a
// session). It returns ErrNoKeyPackage when the pool is empty and there is
// no last-resort KeyPackage.
func (s *States) TakeKeyPackage(agent string) (kp []byte, lastResort bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		if pool := tx.Bucket(bucketKP).Bucket([]byte(agent)); pool != nil {
			c := pool.Cursor()
			if k, v := c.First(); k != nil {
				kp = append([]byte(nil), v...)
				return c.Delete()
			}
		}
		return ErrNoKeyPackage // rolls back: no write, no fsync
	})
	if errors.Is(err, ErrNoKeyPackage) {
		// Read-only, so a flood of fetches from an empty pool costs no
		// disk writes.
		err = s.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketLR).Get([]byte(agent))
			if v == nil {
				return ErrNoKeyPackage
			}
			kp, lastResort = append([]byte(nil), v...), true
			return nil
		})
	}
	if err != nil {
		return nil, false, store.Err(err)
	}
	return kp, lastResort, nil
}

// HeldKeyPackages returns the wire.KeyPackageDigest of every KeyPackage
// agent's pool holds (Digests never nil) and of its last-resort
// KeyPackage (nil when none): what the device learns in its state-ok, so
// that it counts those handed out as used and publishes new ones, and
// knows its last-resort KeyPackage arrived.
func (s *States) HeldKeyPackages(agent string) (*wire.Held, error) {
	out := &wire.Held{Digests: [][]byte{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketLR).Get([]byte(agent)); v != nil {
			out.LastResort = wire.KeyPackageDigest(v)
		}
		pool := tx.Bucket(bucketKP).Bucket([]byte(agent))
		if pool == nil {
			return nil
		}
		return pool.ForEach(func(_, v []byte) error {
			out.Digests = append(out.Digests, wire.KeyPackageDigest(v))
			return nil
		})
	})
	return out, store.Err(err)
}

// KeyPackages returns how many KeyPackages agent's pool holds.
func (s *States) KeyPackages(agent string) int {
	n := 0
	s.db.View(func(tx *bolt.Tx) error {
		if pool := tx.Bucket(bucketKP).Bucket([]byte(agent)); pool != nil {
			n = pool.Stats().KeyN
		}
		return nil
	})
	return n
}
