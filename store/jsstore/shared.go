package jsstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/shared"
)

// The shared memories (store/shared) live in one key-value bucket,
// <prefix>_SHARED, whose keys have per-key TTLs (JetStream's per-message
// TTL, Nats-TTL; the bucket allows them through LimitMarkerTTL). Every
// write is a publish to the key's subject with
// Nats-Expected-Last-Subject-Sequence: 0 for a key not written yet, else
// the sequence of the message read; of concurrent writers one wins,
// whichever relay it runs on (docs/scale-out.md, "Shared memories").
//
// Keys:
//   - spent.<kind>.<hex SHA-256 of the token>: the token's until (Unix
//     nanoseconds, 8 bytes big-endian) and a nonce of the writer (16
//     bytes); TTL until - now, at least a second.
//   - limit.<name>.<base64url SHA-256 of the key>: a shared.Bucket in
//     JSON; TTL the rate's Refill plus a minute.
//   - secret.<name>: the secret's SecretSize bytes; no TTL.
func sharedConfig(n names, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: n.shared, Description: "torpor-relay: spent tokens, budgets, secrets of the fleet",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas, LimitMarkerTTL: markerTTL}
}

// markerTTL is how long the bucket keeps the marker a key leaves when its
// TTL ends (LimitMarkerTTL; the server's minimum is one second).
const markerTTL = time.Minute

// Shared returns the shared memories over c's bucket. They are safe for
// concurrent use, also by many relays over the same bucket.
func (c *Conn) Shared() shared.Store { return jsShared{c} }

type jsShared struct{ c *Conn }

var _ shared.Store = jsShared{}

func (s jsShared) Spent(kind string, _ int) shared.Spent { return jsSpent{s.c, "spent." + kind + "."} }

func (s jsShared) Limiter(name string, rate shared.Rate, _ int) shared.Limiter {
	return jsLimiter{s.c, "limit." + name + ".", rate}
}

// last reads key's last message from the stream leader: its data and
// sequence, data nil for a key never written, deleted, or whose TTL ended
// (a marker), with the sequence to expect when writing it again.
func (c *Conn) last(ctx context.Context, key string) ([]byte, uint64, error) {
	m, err := c.shared.GetLastMsgForSubject(ctx, "$KV."+c.n.shared+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if m.Header.Get("KV-Operation") != "" || m.Header.Get(jetstream.MarkerReasonHeader) != "" || len(m.Data) == 0 {
		return nil, m.Sequence, nil
	}
	return m.Data, m.Sequence, nil
}

// put writes data as key if the key's last sequence is still rev, with a
// TTL when ttl > 0; a lost race is errConflict.
func (c *Conn) put(ctx context.Context, key string, data []byte, rev uint64, ttl time.Duration) error {
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream("KV_" + c.n.shared), jetstream.WithExpectLastSequencePerSubject(rev)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(max(ttl, time.Second)))
	}
	_, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + c.n.shared + "." + key, Data: data}, opts...)
	if isConflict(err) {
		return errConflict
	}
	return err
}

// canWriteShared checks at start that the server lets this user publish
// to the shared bucket, without writing: the probe expects a last
// sequence no key has, so JetStream refuses it ("wrong last sequence")
// once the publish is allowed. A user without the permission gets no
// answer (the server reports the violation apart, Open names it), which
// would otherwise show only at the first token a relay spends.
func (c *Conn) canWriteShared(ctx context.Context) error {
	err := c.put(ctx, "probe", nil, math.MaxUint64, 0)
	if errors.Is(err, errConflict) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("jsstore: bucket %s stored a write expecting sequence %d", c.n.shared, uint64(math.MaxUint64))
	}
	return fmt.Errorf("jsstore: writing to bucket %s: %w", c.n.shared, err)
}

type jsSpent struct {
	c   *Conn
	pre string
}

// Spend publishes the token's key as new; when it exists, it is replayed
// unless its until passed (then it is written again at the sequence read)
// or the write was this call's own (a publish whose answer was lost and
// that a retry found stored).
func (s jsSpent) Spend(ctx context.Context, key [32]byte, until, now time.Time) error {
	k := s.pre + hex.EncodeToString(key[:])
	v := make([]byte, 8, 24)
	binary.BigEndian.PutUint64(v, uint64(until.UnixNano()))
	v = append(v, nonce()...)
	var rev uint64
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err := s.c.retry(ctx, func() error { return s.c.put(ctx, k, v, rev, until.Sub(now)) })
		if !errors.Is(err, errConflict) {
			if err != nil {
				return fmt.Errorf("jsstore: spending a token: %w", err)
			}
			return nil
		}
		var got []byte
		if err := s.c.retry(ctx, func() (err error) { got, rev, err = s.c.last(ctx, k); return err }); err != nil {
			return fmt.Errorf("jsstore: reading a spent token: %w", err)
		}
		switch {
		case bytes.Equal(got, v):
			return nil
		case len(got) == 24 && !time.Unix(0, int64(binary.BigEndian.Uint64(got))).Before(now):
			return shared.ErrReplayed
		case got != nil && len(got) != 24:
			return fmt.Errorf("jsstore: spent token %s: %d bytes, want 24", k, len(got))
		}
	}
	return fmt.Errorf("jsstore: spending a token: %d lost races", maxAttempts)
}

func nonce() []byte {
	b := make([]byte, 16)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return b
}

type jsLimiter struct {
	c    *Conn
	pre  string
	rate shared.Rate
}

// Take reads the key's bucket, takes a token by the rate's rule and, when
// it took one, writes the bucket back at the sequence read; a lost race
// reads again. A refusal writes nothing.
func (l jsLimiter) Take(ctx context.Context, key string, now time.Time) (time.Duration, bool, error) {
	h := sha256.Sum256([]byte(key))
	k := l.pre + base64.RawURLEncoding.EncodeToString(h[:])
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var data []byte
		var rev uint64
		if err := l.c.retry(ctx, func() (err error) { data, rev, err = l.c.last(ctx, k); return err }); err != nil {
			return 0, false, fmt.Errorf("jsstore: reading limit %s: %w", k, err)
		}
		var prev *shared.Bucket
		if data != nil {
			prev = new(shared.Bucket)
			if err := json.Unmarshal(data, prev); err != nil {
				return 0, false, fmt.Errorf("jsstore: limit %s: %w", k, err)
			}
		}
		nb, wait, ok := l.rate.Take(prev, now)
		if !ok {
			return wait, false, nil
		}
		b, _ := json.Marshal(nb)
		err := l.c.retry(ctx, func() error { return l.c.put(ctx, k, b, rev, l.rate.Refill()+time.Minute) })
		if err == nil {
			return 0, true, nil
		}
		if !errors.Is(err, errConflict) {
			return 0, false, fmt.Errorf("jsstore: writing limit %s: %w", k, err)
		}
	}
	return 0, false, fmt.Errorf("jsstore: limit %s: %d lost races", k, maxAttempts)
}

// Secret reads the secret; when there is none it publishes new random
// bytes as new, and after a lost race reads the winner's.
func (s jsShared) Secret(ctx context.Context, name string) ([]byte, error) {
	k := "secret." + name
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var got []byte
		var rev uint64
		if err := s.c.retry(ctx, func() (err error) { got, rev, err = s.c.last(ctx, k); return err }); err != nil {
			return nil, fmt.Errorf("jsstore: reading secret %s: %w", name, err)
		}
		if got != nil {
			if len(got) != shared.SecretSize {
				return nil, fmt.Errorf("jsstore: secret %s: %d bytes, want %d", name, len(got), shared.SecretSize)
			}
			return got, nil
		}
		v := make([]byte, shared.SecretSize)
		rand.Read(v)
		err := s.c.retry(ctx, func() error { return s.c.put(ctx, k, v, rev, 0) })
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, errConflict) {
			return nil, fmt.Errorf("jsstore: writing secret %s: %w", name, err)
		}
	}
	return nil, fmt.Errorf("jsstore: secret %s: %d lost races", name, maxAttempts)
}

// WakeSeconds returns the count of wake seconds in c's shared bucket: one
// key per minute, seconds.<minute>, holding the agents counted in it and
// their seconds (JSON, about 65 bytes an agent with did:key DIDs), each
// change a write at the sequence read. The key must fit one NATS message
// (max_payload, 1 MiB by default): about 15,000 agents in one minute,
// 900,000 in a fleet whose minutes are evenly used; past that an
// assignment fails and the state publish with it.
func (s jsShared) WakeSeconds() shared.WakeSeconds { return jsSeconds(s) }

type jsSeconds struct{ c *Conn }

// change reads minute's agents, lets fn change them and, when fn says it
// did, writes them back at the sequence read, again after a lost race.
func (w jsSeconds) change(ctx context.Context, minute int, fn func(shared.Assigned) bool) error {
	k := fmt.Sprintf("seconds.%d", minute)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var data []byte
		var rev uint64
		if err := w.c.retry(ctx, func() (err error) { data, rev, err = w.c.last(ctx, k); return err }); err != nil {
			return fmt.Errorf("jsstore: reading wake seconds of minute %d: %w", minute, err)
		}
		a := shared.Assigned{}
		if data != nil {
			if err := json.Unmarshal(data, &a); err != nil {
				return fmt.Errorf("jsstore: wake seconds of minute %d: %w", minute, err)
			}
		}
		if !fn(a) {
			return nil
		}
		b, _ := json.Marshal(a)
		err := w.c.retry(ctx, func() error { return w.c.put(ctx, k, b, rev, 0) })
		if !errors.Is(err, errConflict) {
			if err != nil {
				return fmt.Errorf("jsstore: writing wake seconds of minute %d: %w", minute, err)
			}
			return nil
		}
	}
	return fmt.Errorf("jsstore: wake seconds of minute %d: %d lost races", minute, maxAttempts)
}

func (w jsSeconds) Assign(ctx context.Context, agent string, minute int) (int, error) {
	if err := (shared.Slot{Minute: minute}).Check(); err != nil {
		return 0, err
	}
	var sec int
	err := w.change(ctx, minute, func(a shared.Assigned) (changed bool) {
		sec, changed = a.Assign(agent)
		return changed
	})
	return sec, err
}

func (w jsSeconds) Count(ctx context.Context, slots map[string]shared.Slot) error {
	byMinute := map[int]map[string]int{}
	for agent, at := range slots {
		if err := at.Check(); err != nil {
			return err
		}
		if byMinute[at.Minute] == nil {
			byMinute[at.Minute] = map[string]int{}
		}
		byMinute[at.Minute][agent] = at.Second
	}
	for minute, want := range byMinute {
		err := w.change(ctx, minute, func(a shared.Assigned) (changed bool) {
			for agent, sec := range want {
				if s, ok := a[agent]; !ok || s != sec {
					a[agent], changed = sec, true
				}
			}
			return changed
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (w jsSeconds) Forget(ctx context.Context, agent string, minute int) error {
	if err := (shared.Slot{Minute: minute}).Check(); err != nil {
		return err
	}
	return w.change(ctx, minute, func(a shared.Assigned) bool {
		_, ok := a[agent]
		delete(a, agent)
		return ok
	})
}

func (w jsSeconds) Load(ctx context.Context, minute, second int) (int, error) {
	if err := (shared.Slot{Minute: minute, Second: second}).Check(); err != nil {
		return 0, err
	}
	n := 0
	err := w.change(ctx, minute, func(a shared.Assigned) bool {
		for _, s := range a {
			if s == second {
				n++
			}
		}
		return false
	})
	return n, err
}
