package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// FuzzRecord feeds arbitrary bytes to the record decoder: it never panics,
// and whatever it accepts survives encode → decode unchanged.
func FuzzRecord(f *testing.F) {
	for _, r := range []Record{
		{Agent: agent, From: alice, Body: []byte("opaque-ok"), EnqueuedAt: t0, ExpiresAt: t0},
		{Agent: agent, Kind: KindHandshake, Body: nil},
	} {
		v, err := encodeRecord(r, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord(agent, 1, v)
		if err != nil {
			return
		}
		w, err := encodeRecord(r, 1)
		if err != nil {
			t.Fatalf("encoding a decoded record: %v", err)
		}
		again, err := decodeRecord(agent, 1, w)
		if err != nil {
			t.Fatalf("decoding a re-encoded record: %v", err)
		}
		if diff := cmp.Diff(r, again, cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
			t.Errorf("round trip changed the record (-first +second):\n%s", diff)
		}
	})
}

// FuzzLogFrame feeds arbitrary bytes to the record log's frame decoder: it
// never panics, never reads past what it says a frame's length is, and
// whatever it accepts encodes to a frame that decodes to the same. With
// wrap, the input is a frame's type and fields and gets a valid length
// and CRC, so the fuzzer explores the field decoder past the CRC.
func FuzzLogFrame(f *testing.F) {
	r := Record{Agent: agent, Seq: 7, From: alice, Kind: KindHandshake, Body: []byte("opaque"), EnqueuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	for _, seed := range [][]byte{
		appendRecordFrame(nil, r),
		appendAckFrame(nil, agent, []uint64{1, 300, 1 << 40}),
		appendSeqFrame(nil, agent, 99),
		appendRecordFrame(nil, Record{Agent: "a", Seq: 1, Body: []byte{}}),
	} {
		f.Add(seed, false)
		f.Add(seed[recordlog.HeaderLen:], true)
	}
	f.Fuzz(func(t *testing.T, b []byte, wrap bool) {
		if wrap {
			b = recordlog.End(append(make([]byte, recordlog.HeaderLen), b...), 0)
		}
		fr, n, err := decodeFrame(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("frame of %d bytes in %d", n, len(b))
		}
		var again []byte
		switch fr.typ {
		case frameRecord:
			again = appendRecordFrame(nil, fr.rec)
		case frameAck:
			again = appendAckFrame(nil, fr.rec.Agent, fr.seqs)
		case frameSeq:
			again = appendSeqFrame(nil, fr.rec.Agent, fr.seq)
		default:
			t.Fatalf("accepted frame type %#x", fr.typ)
		}
		fr2, n2, err := decodeFrame(again)
		if err != nil || n2 != len(again) {
			t.Fatalf("re-encoded frame %x: %d bytes, %v", again, n2, err)
		}
		if diff := cmp.Diff(fr, fr2, cmp.AllowUnexported(frame{})); diff != "" {
			t.Errorf("round trip changed the frame (-first +second):\n%s", diff)
		}
	})
}
