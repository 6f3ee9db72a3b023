package session

import (
	"errors"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// DefaultPoolSize is the number of unused KeyPackages a sleeping agent
// keeps published (Config.PoolSize).
const DefaultPoolSize = 20

// MaxPoolSize is the largest pool (Config.PoolSize, a Refill target): the
// relay keeps at most this many KeyPackages per agent (the same number as
// store/agents.MaxKeyPackages, which the agent does not link; a test checks
// they agree), so more would be made for nothing.
const MaxPoolSize = 256

// DefaultPadding is the PrivateMessage padding block (Config.Padding).
const DefaultPadding = 256

// Config configures Sessions. Key is required; the zero value of every
// other field is a documented default. Do not change a Config after
// passing it to New.
type Config struct {
	// Key is the agent's identity: its did:key is the identity of its MLS
	// credential and its Ed25519 key the MLS signature key (draft Section
	// 4.3).
	Key *did.PrivateKey
	// Clock supplies the time for KeyPackage lifetimes; nil means
	// clock.Real.
	Clock clock.Clock
	// Rand is the source of keys, secrets and nonces; nil means
	// crypto/rand.
	Rand io.Reader
	// PoolSize is the number of unused KeyPackages the pool keeps; zero
	// means DefaultPoolSize.
	PoolSize int
	// KeyPackageLifetime is the validity of the KeyPackages the pool
	// makes; zero means mls.DefaultKeyPackageLifetime (27 days, within
	// the one-month cap some peers apply; docs/sessions.md). Their private
	// halves are deleted KeyPackageGrace after the lifetime ends.
	KeyPackageLifetime time.Duration
	// KeyPackageGrace is how long after a KeyPackage's lifetime its private
	// half is kept for a Welcome still in a relay's queue; zero means 7 days
	// (the relay's default queue TTL).
	KeyPackageGrace time.Duration
	// Padding pads PrivateMessage content to a multiple of this many bytes
	// (RFC 9420, Section 6.3.1) so that the relay and the network learn
	// less from message sizes; zero means DefaultPadding, negative none.
	Padding int
}

// Sessions are one agent's MLS sessions (draft-chapman-a2a-mls-03 Section
// 6): its groups and its KeyPackage pool, kept in a bbolt file. Every
// operation works inside a transaction the caller owns, so that the agent's
// drain commits MLS state, replay cache and ledger together; an operation
// that fails leaves the transaction as it found it, except that a group
// whose stored state is unusable is deleted (see ErrDropped).
//
// Sessions hold no group state in memory: each operation loads what it
// needs from the transaction. They are safe for concurrent use, as bbolt
// transactions are.
type Sessions struct {
	cfg   Config
	self  did.DID
	clock clock.Clock
}

// New returns the sessions of cfg.Key.
func New(cfg Config) (*Sessions, error) {
	if cfg.Key == nil {
		return nil, errors.New("session: no key")
	}
	if cfg.PoolSize > MaxPoolSize {
		return nil, fmt.Errorf("session: KeyPackage pool of %d, want at most %d (the relay keeps no more)", cfg.PoolSize, MaxPoolSize)
	}
	return &Sessions{cfg: cfg, self: cfg.Key.DID(), clock: clock.Or(cfg.Clock)}, nil
}

// DID returns the agent's DID.
func (s *Sessions) DID() did.DID { return s.self }

// mlsConfig is the configuration of every group and KeyPackage: the
// credential binding as Authentication Service, the injected clock and
// randomness, padding.
func (s *Sessions) mlsConfig() *mls.Config {
	pad := s.cfg.Padding
	switch {
	case pad == 0:
		pad = DefaultPadding
	case pad < 0:
		pad = 0
	}
	return &mls.Config{
		Rand:               s.cfg.Rand,
		Time:               s.clock.Now,
		KeyPackageLifetime: s.cfg.KeyPackageLifetime,
		ValidateCredential: validateCredential,
		ValidateSuccessor:  validateSuccessor,
		PaddingBlock:       pad,
	}
}

func (s *Sessions) poolSize() int {
	if s.cfg.PoolSize <= 0 {
		return DefaultPoolSize
	}
	return s.cfg.PoolSize
}

func (s *Sessions) grace() time.Duration {
	if s.cfg.KeyPackageGrace <= 0 {
		return 7 * 24 * time.Hour
	}
	return s.cfg.KeyPackageGrace
}

// credential is this agent's MLS credential.
func (s *Sessions) credential() mls.Credential { return NewCredential(s.self) }

// Has reports whether the group exists in tx.
func (s *Sessions) Has(tx *bolt.Tx, group []byte) (bool, error) { return exists(tx, group) }

// Drop deletes a group (and its pair-session index entry).
func (s *Sessions) Drop(tx *bolt.Tx, group []byte) error { return drop(tx, group) }

// PairGroup returns the group ID of the current pair session with peer, or
// ErrNoSession.
func (s *Sessions) PairGroup(tx *bolt.Tx, peer did.DID) ([]byte, error) { return peerGroup(tx, peer) }
