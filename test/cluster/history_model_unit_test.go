package cluster

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// seqOp is one operation of a hand-written history: each begins after the
// one before it returned, except where call and ret say otherwise.
type seqOp struct {
	in        queueInput
	out       queueOutput
	call, ret int64
}

func enq(id string, queued bool) seqOp {
	return seqOp{in: queueInput{kind: opEnqueue, id: id}, out: queueOutput{queued: queued}}
}

func pull(after uint64, recs ...heldRecord) seqOp {
	return seqOp{in: queueInput{kind: opPull, after: after, max: 10}, out: queueOutput{recs: recs}}
}

func ack(seqs ...uint64) seqOp { return seqOp{in: queueInput{kind: opAck, seqs: seqs}} }

func history(ops ...seqOp) []porcupine.Operation {
	var h []porcupine.Operation
	for i, o := range ops {
		call, ret := int64(2*i), int64(2*i+1)
		if o.ret != 0 {
			call, ret = o.call, o.ret
		}
		h = append(h, porcupine.Operation{ClientId: i % 3, Input: o.in, Output: o.out, Call: call, Return: ret})
	}
	return h
}

// TestQueueModel: the model accepts histories a correct queue can give,
// concurrent and with unanswered operations, and refuses each violation the
// history checker looks for, so that the checker can fail.
func TestQueueModel(t *testing.T) {
	lost := enq("c", false)
	lost.out.unknown = true
	overlapA, overlapB := enq("a", true), enq("b", true)
	overlapA.call, overlapA.ret, overlapB.call, overlapB.ret = 0, 10, 1, 11
	later := pull(0, heldRecord{1, "b"}, heldRecord{2, "a"})
	later.call, later.ret = 12, 13
	cases := []struct {
		name string
		ok   bool
		h    []porcupine.Operation
	}{
		{"sequential", true, history(enq("a", true), enq("b", true), enq("x", false), pull(0, heldRecord{1, "a"}, heldRecord{2, "b"}), ack(1, 2), pull(0))},
		{"concurrent enqueues in either order", true, history(overlapA, overlapB, later)},
		{"unanswered enqueue taken", true, history(lost, pull(0, heldRecord{1, "c"}))},
		{"unanswered enqueue not taken", true, history(lost, pull(0))},
		{"redelivery before ack", true, history(enq("a", true), pull(0, heldRecord{1, "a"}), pull(0, heldRecord{1, "a"}), ack(1), pull(0))},
		{"bound exceeded", false, history(enq("a", true), enq("b", true), enq("c", true))},
		{"refused delivered", false, history(enq("a", false), pull(0, heldRecord{1, "a"}))},
		{"delivered after ack", false, history(enq("a", true), pull(0, heldRecord{1, "a"}), ack(1), pull(0, heldRecord{1, "a"}))},
		{"seq reused", false, history(enq("a", true), pull(0, heldRecord{1, "a"}), ack(1), enq("b", true), pull(0, heldRecord{1, "b"}))},
		{"queued never delivered", false, history(enq("a", true), pull(0))},
		{"delivered twice under two seqs", false, history(enq("a", true), pull(0, heldRecord{1, "a"}, heldRecord{2, "a"}))},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(queueModel(2), c.h); got != c.ok {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.ok)
		}
	}
}
