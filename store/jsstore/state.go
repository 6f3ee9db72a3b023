package jsstore

import (
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/torpor-dev/torpor/store/queue"
)

// token is agent as one subject token or key element: unpadded base64url
// of the DID, which may hold dots (did:web).
func token(agent string) string { return base64.RawURLEncoding.EncodeToString([]byte(agent)) }

// entry is one live record in an agent's queue state: everything of the
// Record except its body, which is the records stream's message Msg.
type entry struct {
	Seq      uint64
	Msg      uint64 // stream sequence in the records stream
	Size     int64
	Kind     queue.Kind
	From     string
	Enqueued int64 // Unix ns
	Expires  int64 // Unix ns
}

func (e entry) expired(now time.Time) bool { return now.UnixNano() > e.Expires }

// qstate is an agent's queue: the last seq handed out and the live
// records in seq order. It is the one message on the agent's subject in
// the state stream and changes only by compare-and-swap on that subject.
type qstate struct {
	Agent string
	Last  uint64
	Live  []entry
}

// stats totals the entries live at now and those from peer.
func (s *qstate) stats(now time.Time, peer string) (st queue.Stats, fromPeer queue.Peer) {
	for _, e := range s.Live {
		if e.expired(now) {
			continue
		}
		st.Messages++
		st.Bytes += e.Size
		if e.Kind == queue.KindHandshake {
			st.Handshakes++
			st.HandshakeBytes += e.Size
		}
		if peer != "" && e.From == peer {
			fromPeer.Messages++
			fromPeer.Bytes += e.Size
		}
	}
	return st, fromPeer
}

// drop removes the entries for which gone is true and returns them.
func (s *qstate) drop(gone func(entry) bool) []entry {
	var out []entry
	s.Live = slices.DeleteFunc(s.Live, func(e entry) bool {
		if gone(e) {
			out = append(out, e)
			return true
		}
		return false
	})
	return out
}

// wireState is qstate as stored: a version byte (1) then this CBOR array.
// Senders are listed once in Peers and named by index in the entries,
// which keeps a full queue's state small (a few tens of KiB).
type wireState struct {
	_     struct{} `cbor:",toarray"`
	Agent string
	Last  uint64
	Peers []string
	Live  [][7]int64 // seq, msg, size, kind, peer index (-1: none), enqueued, expires
}

const stateVersion = 1

func (s *qstate) marshal() ([]byte, error) {
	w := wireState{Agent: s.Agent, Last: s.Last, Live: make([][7]int64, 0, len(s.Live))}
	index := map[string]int{}
	for _, e := range s.Live {
		p := -1
		if e.From != "" {
			i, ok := index[e.From]
			if !ok {
				i = len(w.Peers)
				index[e.From] = i
				w.Peers = append(w.Peers, e.From)
			}
			p = i
		}
		w.Live = append(w.Live, [7]int64{int64(e.Seq), int64(e.Msg), e.Size, int64(e.Kind), int64(p), e.Enqueued, e.Expires})
	}
	b, err := cbor.Marshal(w)
	if err != nil {
		return nil, err
	}
	return append([]byte{stateVersion}, b...), nil
}

func unmarshalState(b []byte) (qstate, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return qstate{}, fmt.Errorf("%w: queue state: unknown version", queue.ErrCorrupt)
	}
	var w wireState
	if err := cbor.Unmarshal(b[1:], &w); err != nil {
		return qstate{}, fmt.Errorf("%w: queue state: %v", queue.ErrCorrupt, err)
	}
	s := qstate{Agent: w.Agent, Last: w.Last, Live: make([]entry, 0, len(w.Live))}
	for _, v := range w.Live {
		e := entry{Seq: uint64(v[0]), Msg: uint64(v[1]), Size: v[2], Kind: queue.Kind(v[3]), Enqueued: v[5], Expires: v[6]}
		switch p := v[4]; {
		case p >= int64(len(w.Peers)) || p < -1:
			return qstate{}, fmt.Errorf("%w: queue state of %s: peer index %d", queue.ErrCorrupt, w.Agent, p)
		case p >= 0:
			e.From = w.Peers[p]
		}
		s.Live = append(s.Live, e)
	}
	return s, nil
}
