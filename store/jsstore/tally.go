package jsstore

import (
	"container/heap"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
)

// tally is what a view's live records add up to, kept as records join and
// leave the view so that an enqueue checks the bounds without walking the
// agent's queue. A record counts until the latest time its totals were
// asked for, asOf, passes its expiry: one with Expires < asOf is out of
// the totals (expired at asOf, as entry.expired says), every other one is
// in them and in the expiry heap, which takes records out as asOf moves
// on.
type tally struct {
	all   queue.Stats
	peers map[string]queue.Stats // by sender, Messages and Bytes only
	exp   expiryHeap
	asOf  int64 // Unix ns
}

// counted reports whether e is in the totals.
func (t *tally) counted(e entry) bool { return e.Expires >= t.asOf }

// add counts e, a record that joined the view, unless it expired before
// asOf.
func (t *tally) add(e entry) {
	if !t.counted(e) {
		return
	}
	t.change(e, 1)
	heap.Push(&t.exp, e)
}

// remove takes e, a record that left the view, out of the totals.
func (t *tally) remove(e entry) {
	if !t.counted(e) {
		return
	}
	t.change(e, -1)
	for i, x := range t.exp {
		if x.Seq == e.Seq {
			heap.Remove(&t.exp, i)
			return
		}
	}
}

// change adds e's counts to the totals sign times.
func (t *tally) change(e entry, sign int) {
	t.all.Messages += sign
	t.all.Bytes += int64(sign) * e.Size
	if e.Kind == queue.KindHandshake {
		t.all.Handshakes += sign
		t.all.HandshakeBytes += int64(sign) * e.Size
	}
	if e.From == "" {
		return
	}
	p := t.peers[e.From]
	p.Messages += sign
	p.Bytes += int64(sign) * e.Size
	switch {
	case p.Messages == 0:
		delete(t.peers, e.From)
	case t.peers == nil:
		t.peers = map[string]queue.Stats{e.From: p}
	default:
		t.peers[e.From] = p
	}
}

// at moves asOf on to now, taking out the records that expired by then,
// and reports whether the totals are those of now: false when now is
// before asOf, where records taken out may not have expired yet.
func (t *tally) at(now time.Time) bool {
	n := now.UnixNano()
	if n < t.asOf {
		return false
	}
	t.asOf = n
	for len(t.exp) > 0 && t.exp[0].Expires < n {
		t.change(heap.Pop(&t.exp).(entry), -1)
	}
	return true
}

// expiryHeap is the counted records, soonest expiry first
// (container/heap).
type expiryHeap []entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].Expires < h[j].Expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
