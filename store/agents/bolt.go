package agents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/wake"
)

// stateRecord is State on disk: a version byte (1) then this CBOR map.
type stateRecord struct {
	Mode         string      `cbor:"1,keyasint"`
	WindowMinute int         `cbor:"2,keyasint"`
	WindowLen    int64       `cbor:"3,keyasint"` // ns
	WindowOffset int64       `cbor:"4,keyasint"` // ns
	NextWake     int64       `cbor:"5,keyasint,omitempty"`
	Card         []byte      `cbor:"6,keyasint,omitempty"`
	Pulse        []byte      `cbor:"7,keyasint,omitempty"`
	Bounds       BoundsField `cbor:"8,keyasint"`
	UpdatedAt    int64       `cbor:"9,keyasint"`
	Successor    string      `cbor:"10,keyasint,omitempty"`
	Retirement   []byte      `cbor:"11,keyasint,omitempty"`
	Status       []byte      `cbor:"12,keyasint,omitempty"`
	// PeerBytes is Bounds.MaxPeerBytes, added after the seven of Bounds:
	// zero in a state stored before it existed.
	PeerBytes int64 `cbor:"13,keyasint,omitempty"`
	// WakeSecond is State's, plus one (WakeSecondField).
	WakeSecond int `cbor:"14,keyasint,omitempty"`
}

const stateVersion = 1

func encodeState(s State) ([]byte, error) {
	r := stateRecord{
		Mode: string(s.Mode), WindowMinute: s.Window.Minute, WindowLen: int64(s.Window.Length), WindowOffset: int64(s.Window.Offset),
		Card: s.Card, Pulse: s.Pulse, UpdatedAt: s.UpdatedAt.UnixNano(), Successor: s.Successor, Retirement: s.Retirement, Status: s.Status,
		WakeSecond: WakeSecondField(s),
	}
	r.Bounds, r.PeerBytes = NewBoundsField(s.Bounds)
	if !s.NextWake.IsZero() {
		r.NextWake = s.NextWake.UnixNano()
	}
	b, err := cbor.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append([]byte{stateVersion}, b...), nil
}

func decodeState(b []byte) (State, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return State{}, fmt.Errorf("agents: agent state: unknown layout version")
	}
	var r stateRecord
	if err := cbor.Unmarshal(b[1:], &r); err != nil {
		return State{}, fmt.Errorf("agents: agent state: %v", err)
	}
	s := State{
		Mode:   wake.Mode(r.Mode),
		Window: wake.Window{Minute: r.WindowMinute, Length: time.Duration(r.WindowLen), Offset: time.Duration(r.WindowOffset)},
		Card:   r.Card, Pulse: r.Pulse, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC(), Successor: r.Successor, Retirement: r.Retirement, Status: r.Status,
		Bounds: r.Bounds.Bounds(r.PeerBytes),
	}
	if r.NextWake != 0 {
		s.NextWake = time.Unix(0, r.NextWake).UTC()
	}
	SetWakeSecond(&s, r.WakeSecond)
	return s, nil
}

// Bolt is the Store in a bbolt file (the relay's agents.db). Layout:
//
//	bucket "agents"  <agent DID> -> 0x01 || CBOR stateRecord
//	bucket "kp"      bucket <agent DID>  <seq: uint64 BE> -> KeyPackage (MLSMessage bytes)
//	bucket "kp-lr"   <agent DID> -> last-resort KeyPackage (MLSMessage bytes)
//	bucket "admitted" <agent DID> -> empty: admitted by an operator
//	bucket "wakes"   <agent DID> -> history of wakes (EncodeWakes)
//
// A KeyPackage of the pool is deleted in the same transaction that reads
// it, so each is handed out once, also across restarts; Put is one
// fsync'd transaction. The last-resort KeyPackage (RFC 9420, Section
// 16.8) is never deleted by a fetch; the device replaces it.
type Bolt struct {
	db     *bolt.DB
	own    bool
	states stateCache
	// gen counts the transactions that may have written the agents
	// bucket (writeAgents), each counted once it is over. When s owns
	// its file (OpenBolt: bbolt's lock keeps other processes out, and no
	// one else has the *bolt.DB) those are all its writes, and a state
	// Get cached at the current gen is what the file holds.
	gen    atomic.Uint64
	closed atomic.Bool
}

var (
	bucketAgents = []byte("agents") // written only in Bolt.writeAgents
	bucketKP     = []byte("kp")
	bucketLR     = []byte("kp-lr")
	bucketAdm    = []byte("admitted")
	bucketWakes  = []byte("wakes")
)

var _ Store = (*Bolt)(nil)

// OpenBolt opens (creating) the state file at path.
func OpenBolt(path string, o *store.Options) (*Bolt, error) {
	db, err := store.Open(path, o)
	if err != nil {
		return nil, err
	}
	s, err := NewBolt(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// NewBolt keeps agent state in db, which the caller closes.
func NewBolt(db *bolt.DB) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketAgents, bucketKP, bucketLR, bucketAdm, bucketWakes} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agents: %w", store.Err(err))
	}
	return &Bolt{db: db}, nil
}

// Close closes the file if OpenBolt opened it.
func (s *Bolt) Close() error {
	s.closed.Store(true)
	if s.own {
		return s.db.Close()
	}
	return nil
}

// Get implements Store. It decodes the stored record only when it changed
// since the last Get of agent (stateCache), so the State's byte slices
// (Card, Pulse, Retirement, Status) may be shared with other Gets' and
// must not be modified. A Bolt that owns its file does not read it at
// all when nothing wrote the agents bucket since agent's state was cached
// (Bolt.gen); any other reads the record and compares it with the one it
// decoded.
func (s *Bolt) Get(_ context.Context, agent string) (State, error) {
	gen := s.gen.Load() // before the read: a write after it moves gen on
	if s.own && !s.closed.Load() {
		if st, ok := s.states.fresh(agent, gen); ok {
			return st, nil
		}
	}
	var st State
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAgents).Get([]byte(agent))
		if b == nil {
			return ErrUnknownAgent
		}
		var ok bool
		if st, ok = s.states.get(agent, b, gen); ok {
			return nil
		}
		var err error
		if st, err = decodeState(b); err == nil {
			s.states.put(agent, b, st, gen)
		}
		return err
	})
	return st, err
}

// writeAgents is s.db.Update for a transaction that may write the agents
// bucket: once it is over, committed or not, gen moves on, so that the
// states cached before it are read again.
func (s *Bolt) writeAgents(fn func(*bolt.Tx) error) error {
	defer s.gen.Add(1)
	return s.db.Update(fn)
}

// Agents implements Store.
func (s *Bolt) Agents(context.Context) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAgents).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// Put implements Store in one fsync'd transaction.
func (s *Bolt) Put(_ context.Context, agent string, st State, kps [][]byte, lastResort []byte) error {
	val, err := encodeState(st)
	if err != nil {
		return err
	}
	err = s.writeAgents(func(tx *bolt.Tx) error {
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

var errNothingDropped = errors.New("agents: nothing dropped")

// DropKeyPackages implements Store in one fsync'd transaction (none when
// nothing is dropped).
func (s *Bolt) DropKeyPackages(_ context.Context, agent string, drop func(kp []byte) bool) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		pool := tx.Bucket(bucketKP).Bucket([]byte(agent))
		if pool == nil {
			return nil
		}
		var dead [][]byte
		pool.ForEach(func(k, v []byte) error {
			if drop(v) {
				dead = append(dead, bytes.Clone(k))
			}
			return nil
		})
		if len(dead) == 0 {
			return errNothingDropped // rolls back: no write, no fsync
		}
		for _, k := range dead {
			if err := pool.Delete(k); err != nil {
				return err
			}
		}
		n = len(dead)
		return nil
	})
	if errors.Is(err, errNothingDropped) {
		return 0, nil
	}
	return n, store.Err(err)
}

// TakeKeyPackage implements Store: the pool's oldest KeyPackage is read
// and deleted in one write transaction; the last-resort KeyPackage is read
// in a read-only one, so a flood of fetches from an empty pool costs no
// disk writes.
func (s *Bolt) TakeKeyPackage(_ context.Context, agent string) (kp []byte, lastResort bool, err error) {
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

// KeyPackages implements Store.
func (s *Bolt) KeyPackages(_ context.Context, agent string) (pool [][]byte, lastResort []byte, err error) {
	pool = [][]byte{}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketLR).Get([]byte(agent)); v != nil {
			lastResort = append([]byte(nil), v...)
		}
		b := tx.Bucket(bucketKP).Bucket([]byte(agent))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			pool = append(pool, append([]byte(nil), v...))
			return nil
		})
	})
	if err != nil {
		return nil, nil, store.Err(err)
	}
	return pool, lastResort, nil
}

// Admit implements Store.
func (s *Bolt) Admit(_ context.Context, agent string) error {
	return store.Err(s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAdm).Put([]byte(agent), []byte{})
	}))
}

// Admitted implements Store.
func (s *Bolt) Admitted(_ context.Context, agent string) (bool, error) {
	ok := false
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketAdm).Get([]byte(agent)) != nil
		return nil
	})
	return ok, store.Err(err)
}

// Forget implements Store in one fsync'd transaction.
func (s *Bolt) Forget(_ context.Context, agent string) error {
	defer s.states.forget(agent)
	return store.Err(s.writeAgents(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketKP).Bucket([]byte(agent)) != nil {
			if err := tx.Bucket(bucketKP).DeleteBucket([]byte(agent)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketLR).Delete([]byte(agent)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketWakes).Delete([]byte(agent)); err != nil {
			return err
		}
		return tx.Bucket(bucketAgents).Delete([]byte(agent))
	}))
}

// RecordWake implements Store in one fsync'd transaction.
func (s *Bolt) RecordWake(_ context.Context, agent string, w Wake) error {
	return store.Err(s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWakes)
		h, err := DecodeWakes(b.Get([]byte(agent)))
		if err != nil {
			return err
		}
		v, err := EncodeWakes(AddWake(h, w))
		if err != nil {
			return err
		}
		return b.Put([]byte(agent), v)
	}))
}

// Wakes implements Store.
func (s *Bolt) Wakes(_ context.Context, agent string) ([]Wake, error) {
	var h []Wake
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		h, err = DecodeWakes(tx.Bucket(bucketWakes).Get([]byte(agent)))
		return err
	})
	return h, store.Err(err)
}

// Usage implements Store: the agents with a state, and the bytes of the
// file in use: its size less its free pages (bbolt does not shrink its
// file, but reuses freed pages, so forgotten agents make room).
func (s *Bolt) Usage(context.Context) (Usage, error) {
	var u Usage
	err := s.db.View(func(tx *bolt.Tx) error {
		u.Agents = tx.Bucket(bucketAgents).Stats().KeyN
		u.Bytes = tx.Size() - int64(s.db.Stats().FreeAlloc)
		return nil
	})
	return u, store.Err(err)
}
