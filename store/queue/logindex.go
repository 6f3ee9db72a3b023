package queue

import (
	"container/heap"
	"slices"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// logEntry is one live record in the index: where its frame is and what
// the bounds need without reading it.
type logEntry struct {
	seq     uint64
	seg     *recordlog.Segment
	off     int64
	n       int // frame length
	size    int // body length
	kind    Kind
	from    string
	expires int64 // Unix ns
	gen     uint64
}

// logAgent is one agent's part of the index. c.last is its last assigned
// seq; the other counters and peers count exactly the entries in live.
type logAgent struct {
	name  string
	c     counters
	peers map[string]peerCount
	live  []logEntry // by seq
}

// index is the record log's in-memory state: every agent's live records,
// counters and per-peer counts, and the expiry order.
type index struct {
	agents map[string]*logAgent
	expiry expiryHeap
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

// durable drops the journal of the commits up to gen, now synced.
func (x *index) durable(gen uint64) {
	i := 0
	for i < len(x.journal) && x.journal[i].gen <= gen {
		i++
	}
	x.journal = append(x.journal[:0], x.journal[i:]...)
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
				u.a.count(e, -1)
				e.seg.Live--
				e.seg.Records--
			}
			u.a.c.last = u.last
			continue
		}
		j, _ := u.a.find(u.e.seq)
		u.a.live = slices.Insert(u.a.live, j, u.e)
		u.a.count(u.e, +1)
		u.e.seg.Live++
		heap.Push(&x.expiry, expiryItem{expires: u.e.expires, agent: u.a, seq: u.e.seq})
	}
	x.journal = x.journal[:0]
}

func newIndex() index { return index{agents: make(map[string]*logAgent)} }

// agent returns name's entry, creating it.
func (x *index) agent(name string) *logAgent {
	a := x.agents[name]
	if a == nil {
		a = &logAgent{name: name, peers: make(map[string]peerCount)}
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

// add puts e into the index (or, when a's record e.seq is there already,
// moves it to e's frame) and counts it.
func (x *index) add(a *logAgent, e logEntry) {
	last := a.c.last
	a.c.last = max(a.c.last, e.seq)
	i, found := len(a.live), false
	if i > 0 && a.live[i-1].seq >= e.seq { // not the usual append
		i, found = a.find(e.seq)
	}
	e.seg.Records++
	if found {
		a.live[i].seg.Live--
		a.live[i].seg, a.live[i].off, a.live[i].n = e.seg, e.off, e.n
		e.seg.Live++
		return
	}
	a.live = slices.Insert(a.live, i, e)
	a.count(e, +1)
	e.seg.Live++
	if x.building != 0 {
		x.journal = append(x.journal, undo{gen: x.building, a: a, e: e, added: true, last: last})
	}
	heap.Push(&x.expiry, expiryItem{expires: e.expires, agent: a, seq: e.seq})
}

// remove deletes a's record seq from the index and reports whether it was
// there.
func (x *index) remove(a *logAgent, seq uint64) bool {
	i, found := a.find(seq)
	if !found {
		return false
	}
	e := a.live[i]
	a.live = slices.Delete(a.live, i, i+1)
	a.count(e, -1)
	if x.building != 0 {
		x.journal = append(x.journal, undo{gen: x.building, a: a, e: e})
	}
	if e.seg.Live--; e.seg.Live == 0 {
		e.seg.DeadAt = x.building
	}
	return true
}

// count adds (sign +1) or removes (sign -1) e from a's counters and peers.
func (a *logAgent) count(e logEntry, sign int) {
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
	if e.from == "" {
		return
	}
	p := a.peers[e.from]
	p.n += n
	p.bytes += size
	if p.n == 0 {
		delete(a.peers, e.from)
		return
	}
	a.peers[e.from] = p
}

// expired pops the records expired at now (expires < now) out of the
// index and calls fn with each, in expiry order. Heap items whose record
// was acknowledged already are dropped on the way.
func (x *index) expired(now int64, fn func(a *logAgent, seq uint64)) {
	for len(x.expiry) > 0 && x.expiry[0].expires < now {
		it := heap.Pop(&x.expiry).(expiryItem)
		if i, ok := it.agent.find(it.seq); ok && it.agent.live[i].expires == it.expires {
			x.remove(it.agent, it.seq)
			fn(it.agent, it.seq)
		}
	}
}

// compactExpiry rebuilds the expiry heap from the live records when most
// of its items belong to records acknowledged since, so that its size
// follows the live records and not everything enqueued within a TTL.
func (x *index) compactExpiry(live int) {
	if len(x.expiry) < 1024 || len(x.expiry) < 4*live {
		return
	}
	h := make(expiryHeap, 0, 2*live)
	for _, a := range x.agents {
		for _, e := range a.live {
			h = append(h, expiryItem{expires: e.expires, agent: a, seq: e.seq})
		}
	}
	heap.Init(&h)
	x.expiry = h
}

// expiryItem names one record by its expiry.
type expiryItem struct {
	expires int64
	agent   *logAgent
	seq     uint64
}

// expiryHeap is a min-heap of expiryItem by expires (container/heap).
type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(v any)        { *h = append(*h, v.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
