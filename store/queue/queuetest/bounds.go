package queuetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

type step struct {
	from string
	kind queue.Kind
	size int
	at   time.Duration // after T0
	want string
}

func with(f func(*queuebounds.Bounds)) queuebounds.Bounds {
	b := queuebounds.Default()
	f(&b)
	return b
}

// boundCases are the bounds in the reference's order (messages, peer,
// bytes, then the per-peer byte cap), the maximum size, the handshake
// reserve and expiry freeing room.
var boundCases = []struct {
	name   string
	bounds queuebounds.Bounds
	steps  []step
}{
	{"messages", with(func(b *queuebounds.Bounds) { b.MaxMessages = 2 }), []step{
		{from: Alice, size: 1, want: "ok"}, {from: Bob, size: 1, want: "ok"}, {from: Bob, size: 1, want: queue.BoundMessages}}},
	{"messages checked before peer", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.MaxPerPeer = 1, 1 }), []step{
		{from: Alice, size: 1, want: "ok"}, {from: Alice, size: 1, want: queue.BoundMessages}}},
	{"peer", with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 2 }), []step{
		{from: Alice, size: 1, want: "ok"}, {from: Alice, size: 1, want: "ok"},
		{from: Alice, size: 1, want: queue.BoundPeer}, {from: Bob, size: 1, want: "ok"}}},
	{"peer checked before bytes", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.MaxBytes = 1, 10 }), []step{
		{from: Alice, size: 8, want: "ok"}, {from: Alice, size: 8, want: queue.BoundPeer}, {from: Bob, size: 8, want: queue.BoundBytes}}},
	{"peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.MaxBytes = 10, 100 }), []step{
		{from: Alice, size: 6, want: "ok"}, {from: Alice, size: 5, want: queue.BoundPeer}, {from: Alice, size: 4, want: "ok"},
		{from: Alice, size: 0, want: "ok"}, {from: Alice, size: 1, want: queue.BoundPeer}, {from: Bob, size: 10, want: "ok"}}},
	{"bytes checked before peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.MaxBytes = 4, 6 }), []step{
		{from: Alice, size: 4, want: "ok"}, {from: Alice, size: 2, want: queue.BoundPeer},
		{from: Alice, size: 4, want: queue.BoundBytes}, {size: 2, want: "ok"}}},
	{"handshake reserve: peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.HandshakeBytes = 4, 3 }), []step{
		{from: Alice, size: 4, want: "ok"}, {from: Alice, size: 1, want: queue.BoundPeer},
		{from: Alice, kind: queue.KindHandshake, size: 3, want: "ok"},
		{from: Alice, kind: queue.KindHandshake, size: 1, want: queue.BoundPeer}}},
	{"expired records free peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes, b.TTL = 4, time.Second }), []step{
		{from: Alice, size: 4, want: "ok"}, {from: Alice, size: 1, want: queue.BoundPeer},
		{from: Alice, size: 4, at: 2 * time.Second, want: "ok"}}},
	{"bytes up to the limit", with(func(b *queuebounds.Bounds) { b.MaxBytes = 10 }), []step{
		{from: Alice, size: 6, want: "ok"}, {from: Bob, size: 4, want: "ok"},
		{from: Bob, size: 1, want: queue.BoundBytes}, {from: Bob, size: 0, want: "ok"}}},
	{"maximum message size", with(func(b *queuebounds.Bounds) { b.MaxMessageSize = 8 }), []step{
		{from: Alice, size: 9, want: "too-large"}, {from: Alice, size: 8, want: "ok"},
		{from: Alice, kind: queue.KindHandshake, size: 9, want: "too-large"}}},
	{"no sender skips the peer bound", with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 1 }), []step{
		{size: 1, want: "ok"}, {size: 1, want: "ok"}}},
	{"handshake reserve: messages", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages = 2, 1 }), []step{
		{from: Alice, size: 1, want: "ok"}, {from: Bob, size: 1, want: "ok"}, {from: Bob, size: 1, want: queue.BoundMessages},
		{from: Bob, kind: queue.KindHandshake, size: 1, want: "ok"},
		{from: Alice, kind: queue.KindHandshake, size: 1, want: queue.BoundMessages}}},
	{"handshake reserve: bytes", with(func(b *queuebounds.Bounds) { b.MaxBytes, b.HandshakeBytes = 10, 5 }), []step{
		{from: Alice, size: 10, want: "ok"}, {from: Bob, size: 1, want: queue.BoundBytes},
		{from: Bob, kind: queue.KindHandshake, size: 5, want: "ok"},
		{from: Bob, kind: queue.KindHandshake, size: 1, want: queue.BoundBytes}}},
	{"handshake reserve: peer", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.HandshakeMessages = 1, 2 }), []step{
		{from: Alice, size: 1, want: "ok"}, {from: Alice, size: 1, want: queue.BoundPeer},
		{from: Alice, kind: queue.KindHandshake, size: 1, want: "ok"}, {from: Alice, kind: queue.KindHandshake, size: 1, want: "ok"},
		{from: Alice, kind: queue.KindHandshake, size: 1, want: queue.BoundPeer}, {from: Bob, size: 1, want: "ok"}}},
	{"expired records free their slots", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.TTL = 1, time.Minute }), []step{
		{from: Alice, size: 1, want: "ok"},
		{from: Alice, size: 1, at: time.Minute, want: queue.BoundMessages}, // now == ExpiresAt: still live
		{from: Alice, size: 1, at: time.Minute + time.Nanosecond, want: "ok"}}},
	{"expired records free bytes and peer slots", with(func(b *queuebounds.Bounds) { b.MaxPerPeer, b.MaxBytes, b.TTL = 1, 4, time.Second }), []step{
		{from: Alice, size: 4, want: "ok"}, {from: Alice, size: 4, want: queue.BoundPeer},
		{from: Bob, size: 4, want: queue.BoundBytes}, {from: Alice, size: 4, at: 2 * time.Second, want: "ok"}}},
}

// bounds runs boundCases, each for its own agent in one store.
func bounds(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	for _, tt := range boundCases {
		t.Run(tt.name, func(t *testing.T) {
			for i, st := range tt.steps {
				r := queue.Record{Agent: "did:key:bounds-" + tt.name, From: st.from, Kind: st.kind, Body: bytes.Repeat([]byte{'x'}, st.size)}
				_, err := s.Enqueue(bg, r, tt.bounds, T0.Add(st.at))
				if got := Outcome(err); got != st.want {
					t.Fatalf("step %d: Enqueue(from %q, %v, %d bytes) = %s, want %s", i, st.from, st.kind, st.size, got, st.want)
				}
			}
		})
	}
}

// badArguments: invalid records and bounds and a cancelled context are
// refused with their errors and store nothing.
func badArguments(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	zero := queuebounds.Default()
	zero.TTL = 0
	for _, tt := range []struct {
		name   string
		r      queue.Record
		b      queuebounds.Bounds
		target error
	}{
		{"no agent", queue.Record{From: Alice, Body: []byte("x")}, queuebounds.Default(), queue.ErrInvalidRecord},
		{"unknown kind", queue.Record{Agent: Agent, Kind: 7, Body: []byte("x")}, queuebounds.Default(), queue.ErrInvalidRecord},
		{"zero bounds", Msg(Alice, "x"), queuebounds.Bounds{}, queue.ErrInvalidBounds},
		{"zero TTL", Msg(Alice, "x"), zero, queue.ErrInvalidBounds},
	} {
		if _, err := s.Enqueue(bg, tt.r, tt.b, T0); !errors.Is(err, tt.target) {
			t.Errorf("%s: Enqueue = %v, want %v", tt.name, err, tt.target)
		}
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := s.Enqueue(ctx, Msg(Alice, "x"), queuebounds.Default(), T0); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue with a cancelled context = %v, want context.Canceled", err)
	}
	if st := stats(t, s, T0); st.Messages != 0 {
		t.Errorf("refused enqueues stored %d records", st.Messages)
	}
}
