package queue

import (
	"encoding/binary"
	"time"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// The record log's frame payloads (see the package doc's "Record log"
// section; the frames themselves, with their length and CRC, are
// recordlog's):
//
//	type    1 byte: frameRecord, frameAck or frameSeq
//	fields  per type, strings and byte strings as uvarint length + bytes
//
// frameRecord: agent, seq (uvarint), from, kind (1 byte), enqueuedAt and
// expiresAt (Unix ns, int64 LE), body. frameAck (a tombstone): agent, a
// count (uvarint) and that many seqs (uvarint). frameSeq: agent and its last
// assigned seq (uvarint); every segment starts with one per known agent,
// so seqs are never reused after older segments were deleted.
const (
	frameRecord = 'R'
	frameAck    = 'A'
	frameSeq    = 'S'
)

// frame is one decoded frame. For frameAck, seqs holds the acknowledged
// seqs; for frameSeq, seq is the agent's last seq; for frameRecord, rec
// is the record (its body aliases the decoded bytes).
type frame struct {
	typ  byte
	rec  Record
	seq  uint64
	seqs []uint64
}

// appendRecordFrame appends r (Seq set) as a frameRecord.
func appendRecordFrame(buf []byte, r Record) []byte {
	buf, at := recordlog.Begin(buf, frameRecord)
	buf = recordlog.AppendString(buf, r.Agent)
	buf = binary.AppendUvarint(buf, r.Seq)
	buf = recordlog.AppendString(buf, r.From)
	buf = append(buf, byte(r.Kind))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(r.EnqueuedAt.UnixNano()))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(r.ExpiresAt.UnixNano()))
	buf = recordlog.AppendBytes(buf, r.Body)
	return recordlog.End(buf, at)
}

// appendAckFrame appends a tombstone for agent's seqs.
func appendAckFrame(buf []byte, agent string, seqs []uint64) []byte {
	buf, at := recordlog.Begin(buf, frameAck)
	buf = recordlog.AppendString(buf, agent)
	buf = binary.AppendUvarint(buf, uint64(len(seqs)))
	for _, s := range seqs {
		buf = binary.AppendUvarint(buf, s)
	}
	return recordlog.End(buf, at)
}

// appendSeqFrame appends agent's last assigned seq.
func appendSeqFrame(buf []byte, agent string, last uint64) []byte {
	buf, at := recordlog.Begin(buf, frameSeq)
	buf = recordlog.AppendString(buf, agent)
	buf = binary.AppendUvarint(buf, last)
	return recordlog.End(buf, at)
}

// decodeFrame decodes the frame at the start of b and returns it and its
// length. It returns recordlog.ErrTorn when b ends inside the frame and
// another error when the frame is damaged (CRC) or malformed.
func decodeFrame(b []byte) (frame, int, error) {
	typ, fields, n, err := recordlog.Decode(b)
	if err != nil {
		return frame{}, 0, err
	}
	f, err := decodePayload(typ, fields)
	return f, n, err
}

// decodePayload decodes a frame's type and fields.
func decodePayload(typ byte, fields []byte) (frame, error) {
	d := recordlog.NewFields(fields)
	f := frame{typ: typ}
	switch f.typ {
	case frameRecord:
		f.rec = readRecordFields(d)
	case frameAck:
		f.rec.Agent = d.String()
		count := d.Uvarint()
		if count > uint64(d.Left()) { // each seq takes at least one byte
			d.Fail("ack count %d", count)
		}
		for i := uint64(0); i < count && d.Err() == nil; i++ {
			f.seqs = append(f.seqs, d.Uvarint())
		}
	case frameSeq:
		f.rec.Agent = d.String()
		f.seq = d.Uvarint()
	default:
		d.Fail("frame type %#x", f.typ)
	}
	if d.Err() == nil && d.Left() != 0 {
		d.Fail("%d bytes after the fields", d.Left())
	}
	if d.Err() == nil && f.rec.Agent == "" {
		d.Fail("no agent")
	}
	if d.Err() != nil {
		return frame{}, d.Err()
	}
	return f, nil
}

func readRecordFields(d *recordlog.Fields) Record {
	var r Record
	r.Agent = d.String()
	r.Seq = d.Uvarint()
	r.From = d.String()
	r.Kind = Kind(d.Byte())
	r.EnqueuedAt = time.Unix(0, d.Fixed64()).UTC()
	r.ExpiresAt = time.Unix(0, d.Fixed64()).UTC()
	r.Body = d.Bytes()
	if d.Err() == nil && (r.Kind > KindHandshake || r.Seq == 0) {
		d.Fail("record %s/%d: kind %d", r.Agent, r.Seq, r.Kind)
	}
	return r
}
