package queue

import (
	"encoding/binary"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestPeerBytesFromAnOlderFile: a peers entry written before the bytes
// were kept (8 bytes, the count alone) still counts its records; its
// records' bytes count as zero, so the sender may queue up to
// MaxPeerBytes more, and acknowledging every record leaves no entry.
func TestPeerBytesFromAnOlderFile(t *testing.T) {
	s, _ := mustOpen(t)
	b := DefaultBounds()
	b.MaxPeerBytes = 10
	first := mustEnqueue(t, s, msg(alice, "12345678"), b, t0)
	err := s.DB().Update(func(tx *bolt.Tx) error {
		p := tx.Bucket(bucketAgents).Bucket([]byte(agent)).Bucket(bucketPeers)
		return p.Put([]byte(alice), binary.BigEndian.AppendUint64(nil, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	second := mustEnqueue(t, s, msg(alice, "0123456789"), b, t0)
	var fe *FullError
	if _, err := s.Enqueue(bg, msg(alice, "x"), b, t0); !errors.As(err, &fe) || fe.Kind != BoundPeer {
		t.Errorf("Enqueue past MaxPeerBytes = %v, want the peer bound", err)
	}
	if err := s.Ack(bg, agent, []uint64{first.Seq, second.Seq}); err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, s)
	mustEnqueue(t, s, msg(alice, "0123456789"), b, t0)
}
