package bearer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"
)

// PurposeOperator starts the purpose of a token for the relay's operator
// endpoints (/operator/...): OperatorPurpose binds it to one request's
// method and path, and the relay accepts it once (Spent).
const PurposeOperator = "torpor-operator"

// OperatorPurpose is the purpose claim of an operator token for the
// request method (GET, DELETE, POST) to path, the request's escaped path
// without its query ("/operator/queue/did:key:z6Mk…"): a token minted to
// list a queue cannot purge it, nor admit a device.
func OperatorPurpose(method, path string) string {
	return PurposeOperator + " " + method + " " + path
}

// OperatorTTL is the lifetime torporctl gives an operator token, and
// MaxOperatorLifetime the longest the relay accepts.
const (
	OperatorTTL         = time.Minute
	MaxOperatorLifetime = 5 * time.Minute
)

// Errors of Spent.Spend.
var (
	// ErrReplayed wraps the refusal of a token presented a second time.
	ErrReplayed = errors.New("bearer: token already used")
	// ErrSpentFull is why a token is refused while Spent holds Max
	// unexpired tokens: refused rather than one forgotten.
	ErrSpentFull = errors.New("bearer: too many unexpired single-use tokens held")
)

// DefaultMaxSpent is Spent.Max when that is zero.
const DefaultMaxSpent = 4096

// Spent remembers the single-use tokens a server accepted, by the SHA-256
// of their one spelling (Token.String), until they expire. It lives in
// memory: after a restart a token spent before may be accepted once more
// within its lifetime. The zero value is ready; it is safe for concurrent
// use.
type Spent struct {
	// Max bounds how many unexpired tokens are held; zero means
	// DefaultMaxSpent.
	Max int

	mu sync.Mutex
	m  map[[32]byte]int64 // token digest → its exp (Unix seconds)
}

// Spend records t as used at now, or returns an *Error wrapping
// ErrReplayed when it was used before, or an error wrapping ErrSpentFull
// when Max unexpired tokens are held (expired ones are dropped first).
func (s *Spent) Spend(t *Token, now time.Time) error {
	h := sha256.Sum256([]byte(t.String()))
	sec := now.Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[32]byte]int64{}
	}
	if exp, ok := s.m[h]; ok && exp >= sec {
		return fail(ErrReplayed, "transport token: token already used", "a single-use token; issue a new one for every request")
	}
	max := s.Max
	if max <= 0 {
		max = DefaultMaxSpent
	}
	if len(s.m) >= max {
		for k, exp := range s.m {
			if exp < sec {
				delete(s.m, k)
			}
		}
	}
	if len(s.m) >= max {
		return fmt.Errorf("%w: %d", ErrSpentFull, len(s.m))
	}
	s.m[h] = t.Claims.Exp
	return nil
}
