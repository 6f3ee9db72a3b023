package queue

import (
	"container/heap"
	"math"
	"slices"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// logEntry is one live record in the index: where its frame is and what
// the bounds need without reading it. It is 40 bytes: the index holds one
// per live record, in a slice per agent, and nothing else per record
// (docs/performance.md, "Record log memory").
type logEntry struct {
	seq     uint64
	expires int64  // Unix ns
	seg     uint32 // the segment's ID
	off     uint32 // the frame's offset in the segment (SegmentSize is at most maxSegmentSize)
	n       uint32 // frame length
	size    uint32 // body length
	from    uint32 // the sender (index.senders), 0 for none
	kind    Kind
	// pending is set while the commit that wrote the frame is not synced:
	// Next and Stats do not show the record yet.
	pending bool
}

// maxSegmentSize caps LogOptions.SegmentSize so that a frame's offset fits
// a logEntry's uint32 with room for the commit that crosses it.
const maxSegmentSize = 1 << 30

// logAgent is one agent's part of the index. c.last is its last assigned
// seq; the other counters and peers count exactly the entries in live.
type logAgent struct {
	name  string
	c     counters
	peers map[uint32]peerCount // by sender (index.senders)
	live  []logEntry           // by seq
	// minExp is at most the earliest expiry in live (math.MaxInt64 when
	// live is empty), and heapAt the agent's place in index.expiry (-1:
	// not there).
	minExp int64
	heapAt int
}

// index is the record log's in-memory state: every agent's live records,
// counters and per-peer counts, the interned senders, and the agents in
// the order of their earliest expiry.
type index struct {
	agents  map[string]*logAgent
	senders senderTable
	expiry  agentHeap
	segs    []*recordlog.Segment // oldest first; the last one is appended to
	// gone counts for the segments the index no longer holds (a record
	// removed from a segment deleted since, or, at open, one a checkpoint
	// names and a later commit emptied): nothing reads it.
	gone recordlog.Segment
	// building is the commit whose calls change the index now (0 while
	// the log is read at open).
	building uint64
	// journal says how to undo what the commits not yet durable changed,
	// oldest first (rollback).
	journal []undo
}

// undo is one change of the index by commit gen: a record added (added,
// with the agent's last seq before it) or removed (e).
type undo struct {
	gen   uint64
	a     *logAgent
	e     logEntry
	added bool
	last  uint64
}

// seg returns the segment with ID id, or x.gone.
func (x *index) seg(id uint32) *recordlog.Segment {
	i, ok := slices.BinarySearchFunc(x.segs, uint64(id), func(s *recordlog.Segment, id uint64) int {
		switch {
		case s.ID < id:
			return -1
		case s.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return &x.gone
	}
	return x.segs[i]
}

// durable drops the journal of the commits up to gen, now synced, and
// shows their records.
func (x *index) durable(gen uint64) {
	i := 0
	for ; i < len(x.journal) && x.journal[i].gen <= gen; i++ {
		if u := x.journal[i]; u.added {
			if j, ok := u.a.find(u.e.seq); ok {
				u.a.live[j].pending = false
			}
		}
	}
	x.journal = append(x.journal[:0], x.journal[i:]...)
	if len(x.journal) == 0 {
		x.senders.sweep()
	}
}

// rollback undoes every change in the journal, newest first: the index is
// again what the durable commits made it.
func (x *index) rollback() {
	for i := len(x.journal) - 1; i >= 0; i-- {
		u := x.journal[i]
		if u.added {
			if j, ok := u.a.find(u.e.seq); ok {
				e := u.a.live[j]
				u.a.live = slices.Delete(u.a.live, j, j+1)
				x.count(u.a, e, -1)
				s := x.seg(e.seg)
				s.Live--
				s.Records--
			}
			u.a.c.last = u.last
			continue
		}
		j, _ := u.a.find(u.e.seq)
		u.a.live = slices.Insert(u.a.live, j, u.e)
		x.count(u.a, u.e, +1)
		x.seg(u.e.seg).Live++
		x.noteExpiry(u.a, u.e.expires)
	}
	x.journal = x.journal[:0]
	x.senders.sweep()
}

func newIndex() index {
	return index{agents: make(map[string]*logAgent), senders: newSenderTable()}
}

// agent returns name's entry, creating it.
func (x *index) agent(name string) *logAgent {
	a := x.agents[name]
	if a == nil {
		a = &logAgent{name: name, peers: make(map[uint32]peerCount), minExp: math.MaxInt64, heapAt: -1}
		x.agents[name] = a
	}
	return a
}

// find returns the position of seq in a.live and whether it is there.
func (a *logAgent) find(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(a.live, seq, func(e logEntry, s uint64) int {
		switch {
		case e.seq < s:
			return -1
		case e.seq > s:
			return 1
		}
		return 0
	})
}

// add puts e, whose sender is from, into the index (or, when a's record
// e.seq is there already, moves it to e's frame) and counts it. While a
// commit is built, e is pending until the commit is durable.
func (x *index) add(a *logAgent, e logEntry, from string) {
	last := a.c.last
	a.c.last = max(a.c.last, e.seq)
	i, found := len(a.live), false
	if i > 0 && a.live[i-1].seq >= e.seq { // not the usual append
		i, found = a.find(e.seq)
	}
	x.seg(e.seg).Records++
	if found {
		x.seg(a.live[i].seg).Live--
		a.live[i].seg, a.live[i].off, a.live[i].n = e.seg, e.off, e.n
		x.seg(e.seg).Live++
		return
	}
	e.from = x.senders.intern(from)
	e.pending = x.building != 0
	a.live = slices.Insert(a.live, i, e)
	x.count(a, e, +1)
	x.seg(e.seg).Live++
	if x.building != 0 {
		x.journal = append(x.journal, undo{gen: x.building, a: a, e: e, added: true, last: last})
	}
	x.noteExpiry(a, e.expires)
}

// remove deletes a's records seqs from the index and returns the seqs
// that were there, in order. The entries after the first one removed move
// once, however many are removed (a drain acknowledges the oldest
// records).
func (x *index) remove(a *logAgent, seqs []uint64) []uint64 {
	var gone []uint64
	first := len(a.live)
	for _, seq := range seqs {
		if i, found := a.find(seq); found {
			gone = append(gone, seq)
			first = min(first, i)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	gone = slices.Compact(gone)
	keep, j := a.live[:first], 0
	for _, e := range a.live[first:] {
		for j < len(gone) && gone[j] < e.seq {
			j++
		}
		if j < len(gone) && gone[j] == e.seq {
			x.dropped(a, e)
			continue
		}
		keep = append(keep, e)
	}
	clear(a.live[len(keep):])
	a.live = keep
	a.shrink()
	return gone
}

// shrink gives a.live a smaller array once it uses a quarter of its
// capacity, so that memory follows the live records after a drain.
func (a *logAgent) shrink() {
	switch {
	case len(a.live) == 0:
		a.live = nil
	case cap(a.live) >= 64 && len(a.live) < cap(a.live)/4:
		a.live = slices.Clip(slices.Clone(a.live))
	}
}

// dropped does the bookkeeping of a's entry e, taken out of a.live.
func (x *index) dropped(a *logAgent, e logEntry) {
	x.count(a, e, -1)
	if x.building != 0 {
		x.journal = append(x.journal, undo{gen: x.building, a: a, e: e})
	}
	if s := x.seg(e.seg); s != &x.gone {
		if s.Live--; s.Live == 0 {
			s.DeadAt = x.building
		}
	}
}

// count adds (sign +1) or removes (sign -1) e from a's counters and peers,
// and from its sender's references.
func (x *index) count(a *logAgent, e logEntry, sign int) {
	n, size := uint64(1), uint64(e.size)
	if sign < 0 {
		n, size = -n, -size // two's complement subtraction
	}
	a.c.n += n
	a.c.bytes += size
	if e.kind == KindHandshake {
		a.c.hn += n
		a.c.hbytes += size
	}
	if e.from == 0 {
		return
	}
	x.senders.ref(e.from, sign)
	p := a.peers[e.from]
	p.n += n
	p.bytes += size
	if p.n == 0 {
		delete(a.peers, e.from)
		return
	}
	a.peers[e.from] = p
}

// peer returns what a's live records from sender from add up to.
func (x *index) peer(a *logAgent, from string) peerCount {
	if id, ok := x.senders.ids[from]; ok {
		return a.peers[id]
	}
	return peerCount{}
}

// noteExpiry lowers a's earliest expiry to exp and places a in the
// expiry heap.
func (x *index) noteExpiry(a *logAgent, exp int64) {
	switch {
	case a.heapAt < 0:
		a.minExp = exp
		heap.Push(&x.expiry, a)
	case exp < a.minExp:
		a.minExp = exp
		heap.Fix(&x.expiry, a.heapAt)
	}
}

// expired takes the records expired at now (expires < now) out of the
// index and calls fn with each agent's, in seq order. It looks only at
// the agents whose earliest expiry (a lower bound: an acknowledgement
// leaves it) has passed, and corrects it for each.
func (x *index) expired(now int64, fn func(a *logAgent, seqs []uint64)) {
	for len(x.expiry) > 0 && x.expiry[0].minExp < now {
		a := x.expiry[0]
		var gone []uint64
		keep, minExp := a.live[:0], int64(math.MaxInt64)
		for _, e := range a.live {
			if e.expires < now {
				gone = append(gone, e.seq)
				x.dropped(a, e)
				continue
			}
			keep = append(keep, e)
			minExp = min(minExp, e.expires)
		}
		clear(a.live[len(keep):])
		a.live, a.minExp = keep, minExp
		a.shrink()
		if len(keep) == 0 {
			heap.Remove(&x.expiry, a.heapAt)
		} else {
			heap.Fix(&x.expiry, a.heapAt)
		}
		if len(gone) > 0 {
			fn(a, gone)
		}
	}
}

// trim gives every agent's slice of entries the capacity it needs, after
// the log was read at open (append doubled it on the way).
func (x *index) trim() {
	for _, a := range x.agents {
		if cap(a.live) > len(a.live)+len(a.live)/8 {
			a.live = slices.Clip(slices.Clone(a.live))
		}
	}
}

// agentHeap is a min-heap of agents by minExp (container/heap); each
// agent knows its place (heapAt).
type agentHeap []*logAgent

func (h agentHeap) Len() int           { return len(h) }
func (h agentHeap) Less(i, j int) bool { return h[i].minExp < h[j].minExp }
func (h agentHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}
func (h *agentHeap) Push(v any) {
	a := v.(*logAgent)
	a.heapAt = len(*h)
	*h = append(*h, a)
}
func (h *agentHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	a.heapAt = -1
	*h = old[:len(old)-1]
	return a
}

// senderTable interns the senders of live records: an entry names its
// sender by a number, and a sender's name is kept once however many
// records it has queued. A sender no live record names is forgotten once
// no commit that could bring one back is in flight (sweep), so that the
// table follows the live records.
type senderTable struct {
	ids   map[string]uint32
	names []string // by id; names[0] is unused (no sender)
	refs  []int    // live entries naming each id
	free  []uint32
	zero  []uint32 // ids whose refs reached 0, forgotten at the next sweep
}

func newSenderTable() senderTable {
	return senderTable{ids: make(map[string]uint32), names: []string{""}, refs: []int{0}}
}

// intern returns from's id (0 for ""), adding it when it is new.
func (t *senderTable) intern(from string) uint32 {
	if from == "" {
		return 0
	}
	if id, ok := t.ids[from]; ok {
		return id
	}
	var id uint32
	if n := len(t.free); n > 0 {
		id, t.free = t.free[n-1], t.free[:n-1]
		t.names[id], t.refs[id] = from, 0
	} else {
		id = uint32(len(t.names))
		t.names, t.refs = append(t.names, from), append(t.refs, 0)
	}
	t.ids[from] = id
	return id
}

// ref counts one more (sign +1) or one fewer (sign -1) entry naming id.
func (t *senderTable) ref(id uint32, sign int) {
	if t.refs[id] += sign; t.refs[id] == 0 {
		t.zero = append(t.zero, id)
	}
}

// sweep forgets the senders that no live entry names. Only the index
// calls it, when no undo entry can name them.
func (t *senderTable) sweep() {
	for _, id := range t.zero {
		if t.refs[id] == 0 && t.names[id] != "" {
			delete(t.ids, t.names[id])
			t.names[id] = ""
			t.free = append(t.free, id)
		}
	}
	t.zero = t.zero[:0]
}
