package shared

import (
	"container/list"
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/wake"
)

// Memory is a Store in the process's memory, for one relay: after a
// restart a token spent before may be accepted once more within its
// lifetime, budgets start full and the secrets are new. The zero value is
// not ready; use NewMemory. It is safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	spent    map[string]*memSpent
	limiters map[string]*memLimiter
	secrets  map[string][]byte
	seconds  wake.Seconds
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{spent: map[string]*memSpent{}, limiters: map[string]*memLimiter{}, secrets: map[string][]byte{}}
}

// Spent returns the memory of kind, holding at most limit unexpired tokens
// (at least 1). The limit of the first call for a kind stays.
func (m *Memory) Spent(kind string, limit int) Spent {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.spent[kind]
	if s == nil {
		s = &memSpent{max: max(1, limit), m: map[[32]byte]time.Time{}}
		m.spent[kind] = s
	}
	return s
}

// Limiter returns the limiter name, holding at most limit buckets (at least
// 1). The rate and limit of the first call for a name stay.
func (m *Memory) Limiter(name string, rate Rate, limit int) Limiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.limiters[name]
	if l == nil {
		l = &memLimiter{rate: rate, cap: max(1, limit), buckets: map[string]*list.Element{}}
		m.limiters[name] = l
	}
	return l
}

// Secret returns the secret name, drawing it from crypto/rand on its
// first use.
func (m *Memory) Secret(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.secrets[name]; ok {
		return k, nil
	}
	k := make([]byte, SecretSize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("shared: secret %s: %w", name, err)
	}
	m.secrets[name] = k
	return k, nil
}

type memSpent struct {
	max int
	mu  sync.Mutex
	m   map[[32]byte]time.Time // digest → until
}

func (s *memSpent) Spend(_ context.Context, key [32]byte, until, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.m[key]; ok && !u.Before(now) {
		return ErrReplayed
	}
	if len(s.m) >= s.max {
		for k, u := range s.m {
			if u.Before(now) {
				delete(s.m, k)
			}
		}
	}
	if len(s.m) >= s.max {
		return fmt.Errorf("%w: %d", ErrFull, len(s.m))
	}
	s.m[key] = until
	return nil
}

// memLimiter holds at most cap buckets; past that it evicts the least
// recently used one, never all, so that a flood of new keys cannot reset
// the buckets of the callers it is limiting.
type memLimiter struct {
	rate Rate
	cap  int

	mu      sync.Mutex
	buckets map[string]*list.Element // of *memBucket
	lru     list.List                // front: most recently used
}

type memBucket struct {
	key string
	b   Bucket
}

func (l *memLimiter) Take(_ context.Context, key string, now time.Time) (time.Duration, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prev *Bucket
	e := l.buckets[key]
	if e == nil {
		if l.lru.Len() >= l.cap {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.buckets, old.Value.(*memBucket).key)
		}
		e = l.lru.PushFront(&memBucket{key: key})
		l.buckets[key] = e
	} else {
		prev = &e.Value.(*memBucket).b
	}
	l.lru.MoveToFront(e)
	nb, wait, ok := l.rate.Take(prev, now)
	e.Value.(*memBucket).b = nb
	return wait, ok, nil
}

// Len returns how many buckets the limiter l (one of a Memory's) holds.
func Len(l Limiter) int {
	ml, ok := l.(*memLimiter)
	if !ok {
		return -1
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.lru.Len()
}
