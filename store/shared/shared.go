// Package shared holds the relay's security and budget memories: the
// single-use tokens it accepted (link, console login and operator
// tokens), its token-bucket limits (KeyPackage budgets and rate limits),
// its secrets (the fleet console's session key) and its count of wake
// seconds (which second of its minute each agent wakes at). A single
// relay keeps them in memory (Memory); a fleet of relays on JetStream keeps them in
// one key-value bucket (store/jsstore, docs/scale-out.md, "Shared
// memories"), so that a token spent at one relay is refused at the others
// and a budget is one budget for the fleet. sharedtest is the contract
// both implementations pass.
package shared

import (
	"context"
	"errors"
	"math"
	"time"
)

// Store is the relay's shared memories.
type Store interface {
	// Spent returns the memory of single-use tokens of one kind ("link",
	// "login", "operator"): kinds are apart. max bounds how many
	// unexpired tokens a memory that holds them itself keeps; a store
	// bounded otherwise (by each key's TTL) may ignore it.
	Spent(kind string, max int) Spent
	// Limiter returns the token-bucket limit named name: per key, rate.N
	// tokens per rate.Per, at most rate.N at once. Buckets of one name
	// are shared by every Store over the same data; max bounds how many
	// buckets a store that holds them itself keeps (least recently used
	// evicted first).
	Limiter(name string, rate Rate, max int) Limiter
	// Secret returns the secret named name: SecretSize random bytes,
	// created once. Concurrent first calls, through any Store over the
	// same data, all return the same bytes.
	Secret(ctx context.Context, name string) ([]byte, error)
	// WakeSeconds returns the count of agents' wake seconds.
	WakeSeconds() WakeSeconds
}

// SecretSize is the length of a Secret.
const SecretSize = 32

// Spent remembers single-use tokens by the SHA-256 of their one
// spelling.
type Spent interface {
	// Spend records the token whose digest is key as used until until (its
	// expiry plus the clock skew a server allows), and returns nil; or an
	// error wrapping ErrReplayed when it was recorded before and until
	// has not passed at now; or one wrapping ErrFull when the memory holds
	// all it may (expired tokens are dropped first); or the store's error,
	// after which the token must be refused: it may or may not be
	// recorded, so a token is accepted at most once.
	Spend(ctx context.Context, key [32]byte, until, now time.Time) error
}

// Limiter is a token bucket per key.
type Limiter interface {
	// Take takes a token for key at now. When none is left it returns
	// false and how long until one is. On an error the caller refuses.
	Take(ctx context.Context, key string, now time.Time) (wait time.Duration, ok bool, err error)
}

// Rate is N tokens per Per.
type Rate struct {
	N   int
	Per time.Duration
}

// Errors of Spend.
var (
	ErrReplayed = errors.New("shared: token already used")
	ErrFull     = errors.New("shared: too many unexpired single-use tokens held")
)

// Bucket is a token bucket's state: Tokens left at At (Unix nanoseconds).
// A missing bucket is full.
type Bucket struct {
	Tokens float64 `json:"t"`
	At     int64   `json:"at"`
}

// Take takes one token from b at now under rate, returning the new state,
// whether a token was taken and, when none was, the wait until one is. A
// clock that went back adds nothing.
func (r Rate) Take(b *Bucket, now time.Time) (Bucket, time.Duration, bool) {
	full := float64(r.N)
	perSec := full / r.Per.Seconds()
	nb := Bucket{Tokens: full, At: now.UnixNano()}
	if b != nil {
		elapsed := max(0, time.Duration(now.UnixNano()-b.At).Seconds())
		nb.Tokens = math.Min(full, b.Tokens+elapsed*perSec)
	}
	if nb.Tokens < 1 {
		wait := time.Duration(math.Ceil((1 - nb.Tokens) / perSec * float64(time.Second)))
		return nb, wait, false
	}
	nb.Tokens--
	return nb, 0, true
}

// Refill is how long a bucket of rate takes to become full from empty:
// after that a forgotten bucket is the same as a full one.
func (r Rate) Refill() time.Duration { return r.Per }
