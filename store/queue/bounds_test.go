package queue

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// outcome names an Enqueue result: "ok", a FullError kind, or "too-large".
func outcome(err error) string {
	var fe *FullError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &fe):
		if !errors.Is(err, ErrFull) {
			return "FullError not ErrFull"
		}
		return fe.Kind
	case errors.Is(err, ErrTooLarge):
		return "too-large"
	}
	return err.Error()
}

// boundsStep is one Enqueue of a boundsTest and its expected outcome.
type boundsStep struct {
	from string
	kind Kind
	size int
	at   time.Duration // after t0
	want string
}

type boundsTest struct {
	name   string
	bounds queuebounds.Bounds
	steps  []boundsStep
}

// with returns the default bounds as f changes them.
func with(f func(*queuebounds.Bounds)) queuebounds.Bounds {
	b := queuebounds.Default()
	f(&b)
	return b
}

var boundsTests = []boundsTest{
	{"messages", with(func(b *queuebounds.Bounds) { b.MaxMessages = 2 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: bob, size: 1, want: "ok"},
		{from: bob, size: 1, want: BoundMessages},
	}},
	{"messages checked before peer", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.MaxPerPeer = 1, 1 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: alice, size: 1, want: BoundMessages},
	}},
	{"peer", with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 2 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: alice, size: 1, want: "ok"},
		{from: alice, size: 1, want: BoundPeer},
		{from: bob, size: 1, want: "ok"},
	}},
	{"peer checked before bytes", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.MaxBytes = 1, 10 }), []boundsStep{
		{from: alice, size: 8, want: "ok"},
		{from: alice, size: 8, want: BoundPeer},
		{from: bob, size: 8, want: BoundBytes},
	}},
	{"peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.MaxBytes = 10, 100 }), []boundsStep{
		{from: alice, size: 6, want: "ok"},
		{from: alice, size: 5, want: BoundPeer},
		{from: alice, size: 4, want: "ok"},
		{from: alice, size: 0, want: "ok"},
		{from: alice, size: 1, want: BoundPeer},
		{from: bob, size: 10, want: "ok"},
	}},
	{"bytes checked before peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.MaxBytes = 4, 6 }), []boundsStep{
		{from: alice, size: 4, want: "ok"},
		{from: alice, size: 2, want: BoundPeer},
		{from: alice, size: 4, want: BoundBytes},
		{from: "", size: 2, want: "ok"}, // no sender: no peer bound
	}},
	{"handshake reserve: peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.HandshakeBytes = 4, 3 }), []boundsStep{
		{from: alice, size: 4, want: "ok"},
		{from: alice, size: 1, want: BoundPeer},
		{from: alice, kind: KindHandshake, size: 3, want: "ok"},
		{from: alice, kind: KindHandshake, size: 1, want: BoundPeer},
	}},
	{"expired records free peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.TTL = 4, time.Second }), []boundsStep{
		{from: alice, size: 4, want: "ok"},
		{from: alice, size: 1, want: BoundPeer},
		{from: alice, size: 4, at: 2 * time.Second, want: "ok"},
	}},
	{"bytes up to the limit", with(func(b *queuebounds.Bounds) { b.MaxBytes = 10 }), []boundsStep{
		{from: alice, size: 6, want: "ok"},
		{from: bob, size: 4, want: "ok"},
		{from: bob, size: 1, want: BoundBytes},
		{from: bob, size: 0, want: "ok"},
	}},
	{"raw bytes counted (od-041)", with(func(b *queuebounds.Bounds) { b.MaxBytes = 4 }), []boundsStep{
		{from: alice, size: 10, want: BoundBytes},
		{from: alice, size: 4, want: "ok"},
	}},
	{"maximum message size", with(func(b *queuebounds.Bounds) { b.MaxMessageSize = 8 }), []boundsStep{
		{from: alice, size: 9, want: "too-large"},
		{from: alice, size: 8, want: "ok"},
		{from: alice, kind: KindHandshake, size: 9, want: "too-large"},
	}},
	{"no sender skips the peer bound", with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 1 }), []boundsStep{
		{from: "", size: 1, want: "ok"},
		{from: "", size: 1, want: "ok"},
	}},
	{"handshake reserve: messages", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages = 2, 1 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: bob, size: 1, want: "ok"},
		{from: bob, size: 1, want: BoundMessages},
		{from: bob, kind: KindHandshake, size: 1, want: "ok"},
		{from: alice, kind: KindHandshake, size: 1, want: BoundMessages},
		{from: alice, size: 1, want: BoundMessages},
	}},
	{"handshake reserve: bytes", with(func(b *queuebounds.Bounds) { b.MaxBytes, b.HandshakeBytes = 10, 5 }), []boundsStep{
		{from: alice, size: 10, want: "ok"},
		{from: bob, size: 1, want: BoundBytes},
		{from: bob, kind: KindHandshake, size: 5, want: "ok"},
		{from: bob, kind: KindHandshake, size: 1, want: BoundBytes},
	}},
	{"handshake reserve: peer", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.HandshakeMessages = 1, 2 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: alice, size: 1, want: BoundPeer},
		{from: alice, kind: KindHandshake, size: 1, want: "ok"},
		{from: alice, kind: KindHandshake, size: 1, want: "ok"},
		{from: alice, kind: KindHandshake, size: 1, want: BoundPeer},
		{from: bob, size: 1, want: "ok"},
	}},
	{"handshakes first use the ordinary room", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages = 1, 1 }), []boundsStep{
		{from: alice, kind: KindHandshake, size: 1, want: "ok"},
		{from: bob, size: 1, want: BoundMessages},
		{from: bob, kind: KindHandshake, size: 1, want: "ok"},
		{from: bob, kind: KindHandshake, size: 1, want: BoundMessages},
	}},
	{"no reserve", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages, b.HandshakeBytes = 1, 0, 0 }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: bob, kind: KindHandshake, size: 1, want: BoundMessages},
	}},
	{"expired records free their slots", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.TTL = 1, time.Minute }), []boundsStep{
		{from: alice, size: 1, want: "ok"},
		{from: alice, size: 1, at: time.Minute, want: BoundMessages}, // now == ExpiresAt: still live
		{from: alice, size: 1, at: time.Minute + time.Nanosecond, want: "ok"},
	}},
	{"expired records free bytes and peer slots", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.MaxBytes, b.TTL = 1, 4, time.Second }), []boundsStep{
		{from: alice, size: 4, want: "ok"},
		{from: alice, size: 4, want: BoundPeer},
		{from: bob, size: 4, want: BoundBytes},
		{from: alice, size: 4, at: 2 * time.Second, want: "ok"},
	}},
}

func TestBounds(t *testing.T) {
	for _, tt := range boundsTests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := mustOpen(t)
			for i, st := range tt.steps {
				r := Record{Agent: agent, From: st.from, Kind: st.kind, Body: bytes.Repeat([]byte{'x'}, st.size)}
				_, err := s.Enqueue(context.Background(), r, tt.bounds, t0.Add(st.at))
				if got := outcome(err); got != st.want {
					t.Fatalf("step %d: Enqueue(from %q, %v, %d bytes) = %s, want %s", i, st.from, st.kind, st.size, got, st.want)
				}
				checkConsistent(t, s)
			}
		})
	}
}

func TestEnqueueRejectsBadArguments(t *testing.T) {
	s, _ := mustOpen(t)
	zero := queuebounds.Default()
	zero.TTL = 0
	tests := []struct {
		name   string
		r      Record
		b      queuebounds.Bounds
		target error
	}{
		{"no agent", Record{From: alice, Body: []byte("x")}, queuebounds.Default(), ErrInvalidRecord},
		{"unknown kind", Record{Agent: agent, Kind: 7, Body: []byte("x")}, queuebounds.Default(), ErrInvalidRecord},
		{"zero bounds", msg(alice, "x"), queuebounds.Bounds{}, ErrInvalidBounds},
		{"zero TTL", msg(alice, "x"), zero, ErrInvalidBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Enqueue(context.Background(), tt.r, tt.b, t0); !errors.Is(err, tt.target) {
				t.Errorf("Enqueue = %v, want %v", err, tt.target)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Enqueue(ctx, msg(alice, "x"), queuebounds.Default(), t0); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with a cancelled context = %v, want context.Canceled", err)
	}
	if st, _ := s.Stats(context.Background(), agent, t0); st.Messages != 0 {
		t.Errorf("rejected enqueues stored %d records", st.Messages)
	}
}

func TestFullErrorMessage(t *testing.T) {
	err := error(&FullError{Kind: BoundPeer})
	if got, want := err.Error(), "queue: full (peer)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrFull) {
		t.Error("errors.Is(FullError, ErrFull) = false")
	}
}
