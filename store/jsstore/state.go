package jsstore

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/queue"
)

// token is agent as one subject token or key element: unpadded base64url
// of the DID, which may hold dots (did:web).
func token(agent string) string { return base64.RawURLEncoding.EncodeToString([]byte(agent)) }

// decodeToken is the agent whose token t is.
func decodeToken(t string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	return string(b), err
}

// Headers of a record message (the body is the record's body) and of a
// marker message (the body is a wireMarker).
const (
	hdrSeq    = "Torpor-Seq"    // the record's seq, decimal
	hdrKind   = "Torpor-Kind"   // its queue.Kind, decimal
	hdrFrom   = "Torpor-From"   // its sender's DID; absent when none
	hdrTimes  = "Torpor-Times"  // enqueued and expiry times, Unix ns, decimal, one space between
	hdrOp     = "Torpor-Op"     // the id of the Enqueue call that wrote it, before Nats-Msg-Id carried it
	hdrMarker = "Torpor-Marker" // "1" on a marker
)

// entry is one record of an agent's queue as its message's headers give
// it: everything but the body.
type entry struct {
	Seq      uint64
	Msg      uint64 // stream sequence of the record's message
	Size     int64
	Kind     queue.Kind
	From     string
	Enqueued int64 // Unix ns
	Expires  int64 // Unix ns
	Op       string
}

func (e entry) expired(now time.Time) bool { return now.UnixNano() > e.Expires }

// recordMsg is the message that stores r for one Enqueue call, op.
func recordMsg(subj string, r queue.Record, op string) *nats.Msg {
	h := nats.Header{
		hdrSeq:   {strconv.FormatUint(r.Seq, 10)},
		hdrKind:  {strconv.Itoa(int(r.Kind))},
		hdrTimes: {strconv.FormatInt(r.EnqueuedAt.UnixNano(), 10) + " " + strconv.FormatInt(r.ExpiresAt.UnixNano(), 10)},
		// The Enqueue call's id as JetStream's message id: a retry of
		// a write that landed unanswered is deduplicated (answered with
		// the first write's sequence and "duplicate") within the
		// stream's duplicate window, even once the record was taken.
		jetstream.MsgIDHeader: {op},
	}
	if r.From != "" {
		h[hdrFrom] = []string{r.From}
	}
	return &nats.Msg{Subject: subj, Data: r.Body, Header: h}
}

// parseRecord reads the entry of a record message stored at stream
// sequence msg.
func parseRecord(h nats.Header, msg uint64, size int) (entry, error) {
	e := entry{Msg: msg, Size: int64(size), From: h.Get(hdrFrom), Op: cmp.Or(h.Get(jetstream.MsgIDHeader), h.Get(hdrOp))}
	seq, err1 := strconv.ParseUint(h.Get(hdrSeq), 10, 64)
	kind, err2 := strconv.ParseUint(h.Get(hdrKind), 10, 8)
	enq, exp, ok := strings.Cut(h.Get(hdrTimes), " ")
	var err3, err4 error
	e.Enqueued, err3 = strconv.ParseInt(enq, 10, 64)
	e.Expires, err4 = strconv.ParseInt(exp, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !ok || seq == 0 {
		return entry{}, fmt.Errorf("%w: queue message %d: bad headers %v", queue.ErrCorrupt, msg, h)
	}
	e.Seq, e.Kind = seq, queue.Kind(kind)
	return e, nil
}

// wireMarker is a marker's body: a version byte (1) then this CBOR
// array. A marker records that the records of seqs Gone left the queue
// (acknowledged or purged) and that seqs up to Last were handed out; it
// is written before their messages are deleted.
type wireMarker struct {
	_    struct{} `cbor:",toarray"`
	Last uint64
	Gone []uint64
}

// wireMoved is a moved marker's body: a version byte (2) then this CBOR
// array. It is a marker (Last and Gone as in wireMarker) that also says
// the queue moved to the subject p.qrec.<To> (place.go). Its version
// differs from a plain marker's so that a relay of the previous release,
// which would go on writing on this subject, fails on it instead (its
// fold refuses an unknown version): it refuses the agent's requests, and
// loses none.
type wireMoved struct {
	_    struct{} `cbor:",toarray"`
	Last uint64
	Gone []uint64
	To   string
}

const (
	markerVersion = 1
	movedVersion  = 2
)

func markerMsg(subj string, last uint64, gone []uint64) (*nats.Msg, error) {
	b, err := cbor.Marshal(wireMarker{Last: last, Gone: gone})
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subj, Data: append([]byte{markerVersion}, b...), Header: nats.Header{hdrMarker: {"1"}}}, nil
}

// movedMsg is the marker on subj that moves the queue to p.qrec.<to>.
func movedMsg(subj string, last uint64, gone []uint64, to string) (*nats.Msg, error) {
	b, err := cbor.Marshal(wireMoved{Last: last, Gone: gone, To: to})
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subj, Data: append([]byte{movedVersion}, b...), Header: nats.Header{hdrMarker: {"1"}}}, nil
}

// parseMarker reads a marker of either version; to is empty but for a
// moved marker.
func parseMarker(b []byte, msg uint64) (w wireMarker, to string, err error) {
	if len(b) > 0 && b[0] == movedVersion {
		var m wireMoved
		if err := cbor.Unmarshal(b[1:], &m); err != nil {
			return w, "", fmt.Errorf("%w: queue marker %d: %v", queue.ErrCorrupt, msg, err)
		}
		if !validSuffix(m.To) {
			return w, "", fmt.Errorf("%w: queue marker %d: moved to %q", queue.ErrCorrupt, msg, m.To)
		}
		return wireMarker{Last: m.Last, Gone: m.Gone}, m.To, nil
	}
	if len(b) == 0 || b[0] != markerVersion {
		return w, "", fmt.Errorf("%w: queue marker %d: unknown version", queue.ErrCorrupt, msg)
	}
	if err := cbor.Unmarshal(b[1:], &w); err != nil {
		return w, "", fmt.Errorf("%w: queue marker %d: %v", queue.ErrCorrupt, msg, err)
	}
	return w, "", nil
}

// view is an agent's queue as folded from the messages on its subject, in
// stream order, up to the stream sequence Last. Every change to the queue
// appends a message to the subject, and a message is deleted only after a
// later one (a marker) says so, so Last is the version of the whole queue:
// a publish expecting Last as the subject's last sequence succeeds only
// on the queue this view describes.
type view struct {
	Last    uint64   // stream sequence of the last message folded (0: none)
	MaxSeq  uint64   // the highest seq handed out
	Live    []entry  // records no marker names, in seq order
	Gone    []entry  // records a marker names whose messages may remain
	Markers []uint64 // stream sequences of the markers folded, oldest first
	t       tally    // what Live adds up to, for stats

	// The last moved marker folded: the queue moved to p.qrec.<Moved> at
	// stream sequence MovedAt (0: none). See place.go.
	Moved   string
	MovedAt uint64
}

// fold applies the message m, stored at stream sequence seq, to v.
func (v *view) fold(h nats.Header, data []byte, seq uint64) error {
	if h.Get(hdrMarker) != "" {
		w, to, err := parseMarker(data, seq)
		if err != nil {
			return err
		}
		if to != "" {
			v.Moved, v.MovedAt = to, seq
		}
		v.MaxSeq = max(v.MaxSeq, w.Last)
		for _, s := range w.Gone {
			if i := slices.IndexFunc(v.Live, func(e entry) bool { return e.Seq == s }); i >= 0 {
				v.Gone = append(v.Gone, v.Live[i])
				v.t.remove(v.Live[i])
				v.Live = slices.Delete(v.Live, i, i+1)
			}
		}
		v.Markers = append(v.Markers, seq)
	} else if h.Get(hdrSeq) == "" && h.Get("Torpor-Agent") != "" {
		// A body of the previous layout that no state named (Open
		// refuses while its state stream holds any): never a record.
	} else {
		e, err := parseRecord(h, seq, len(data))
		if err != nil {
			return err
		}
		v.MaxSeq = max(v.MaxSeq, e.Seq)
		v.add(e)
	}
	v.Last = seq
	return nil
}

// add appends e, a record stored after every one in v, to v.Live.
func (v *view) add(e entry) {
	v.Live = append(v.Live, e)
	v.t.add(e)
}

// stats totals the entries live at now and those from peer: from v's
// tally, or, for a now before a time it was asked for already, by walking
// v.Live.
func (v *view) stats(now time.Time, peer string) (st, fromPeer queue.Stats) {
	if !v.t.at(now) {
		return v.walk(now, peer)
	}
	if peer != "" {
		fromPeer = v.t.peers[peer]
	}
	return v.t.all, fromPeer
}

// walk totals the entries live at now and those from peer, one by one.
func (v *view) walk(now time.Time, peer string) (st, fromPeer queue.Stats) {
	for _, e := range v.Live {
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
