package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model of one device's queue that the history checker of
// history_integration_test.go checks a fleet against, with
// github.com/anishathalye/porcupine: a sequential specification, which
// every concurrent history of enqueues, pulls and acknowledgements must be
// equivalent to, in an order that respects real time (linearizability,
// Herlihy and Wing 1990, https://cs.brown.edu/~mph/HerlihyW90/p463-herlihy.pdf).
// Its state is the records the queue holds, in seq order, and the last seq
// handed out:
//
//   - an enqueue answered queued takes seq last+1 and needs a free slot
//     (fewer than bound records held): bounds are never exceeded, seqs
//     never reused;
//   - an enqueue answered queued false changes nothing: a refused request is
//     never delivered;
//   - a pull returns exactly the held records after its seq, in order, up
//     to its maximum: nothing acknowledged comes back, nothing queued is
//     skipped, a seq always carries the same request;
//   - an acknowledgement removes its records.
//
// An enqueue or acknowledgement that got no answer (its relay died, its
// link broke) may or may not have taken effect: the model allows both.

// queueState is the model's state. Its fields are comparable values, so
// that states compare with ==.
type queueState struct {
	last uint64
	held string // "seq=id;" for each held record, in seq order
}

// opKind tells the three operations apart.
type opKind int

const (
	opEnqueue opKind = iota
	opPull
	opAck
)

// queueInput is an operation's invocation.
type queueInput struct {
	kind  opKind
	id    string   // enqueue: the request's id
	after uint64   // pull: seqs after this one
	max   int      // pull: at most this many
	seqs  []uint64 // ack
}

// queueOutput is an operation's response.
type queueOutput struct {
	unknown bool   // no answer: the operation may or may not have taken effect
	queued  bool   // enqueue: answered queued
	answer  string // enqueue: the answer, for the visualization
	recs    []heldRecord
}

// heldRecord is one record a pull returned.
type heldRecord struct {
	seq uint64
	id  string
}

func (s queueState) records() []heldRecord {
	var out []heldRecord
	for e := range strings.SplitSeq(s.held, ";") {
		if e == "" {
			continue
		}
		var r heldRecord
		seq, id, _ := strings.Cut(e, "=")
		fmt.Sscan(seq, &r.seq)
		r.id = id
		out = append(out, r)
	}
	return out
}

func encodeHeld(recs []heldRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%d=%s;", r.seq, r.id)
	}
	return b.String()
}

// queueModel is the specification of a device queue of at most bound
// records.
func queueModel(bound int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{queueState{}} },
		Step: func(state, input, output any) []any {
			return stepQueue(bound, state.(queueState), input.(queueInput), output.(queueOutput))
		},
		DescribeOperation: describeOp,
		DescribeState: func(state any) string {
			s := state.(queueState)
			return fmt.Sprintf("last seq %d, held %s", s.last, s.held)
		},
	}
	return nm.ToModel()
}

// stepQueue returns the states the queue may be in after the operation in
// s, none when the operation could not have answered out from s.
func stepQueue(bound int, s queueState, in queueInput, out queueOutput) []any {
	switch in.kind {
	case opEnqueue:
		held := s.records()
		grown, ok := s, len(held) < bound
		if ok {
			grown = queueState{last: s.last + 1, held: s.held + encodeHeld([]heldRecord{{s.last + 1, in.id}})}
		}
		switch {
		case out.unknown && ok:
			return []any{s, grown}
		case out.unknown || !out.queued:
			return []any{s}
		case ok:
			return []any{grown}
		}
		return nil
	case opPull:
		var want []heldRecord
		for _, r := range s.records() {
			if r.seq > in.after && len(want) < in.max {
				want = append(want, r)
			}
		}
		if slices.Equal(want, out.recs) {
			return []any{s}
		}
		return nil
	}
	kept := slices.DeleteFunc(s.records(), func(r heldRecord) bool { return slices.Contains(in.seqs, r.seq) })
	acked := queueState{last: s.last, held: encodeHeld(kept)}
	if out.unknown {
		return []any{s, acked}
	}
	return []any{acked}
}

func describeOp(input, output any) string {
	in, out := input.(queueInput), output.(queueOutput)
	res := "?"
	switch {
	case out.unknown:
		res = "no answer"
	case in.kind == opEnqueue:
		res = out.answer
	case in.kind == opPull:
		res = encodeHeld(out.recs)
	case in.kind == opAck:
		res = "acked"
	}
	switch in.kind {
	case opEnqueue:
		return fmt.Sprintf("enqueue(%s) → %s", in.id, res)
	case opPull:
		return fmt.Sprintf("pull(after %d, max %d) → %s", in.after, in.max, res)
	}
	return fmt.Sprintf("ack(%v) → %s", in.seqs, res)
}
