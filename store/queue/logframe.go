package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// The record log's frames (see the package doc's "Record log" section).
// A frame is
//
//	length  uint32 LE: the bytes after the CRC (type and fields)
//	crc     uint32 LE: CRC-32C (Castagnoli) of the length and the bytes after the CRC
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

// frameHeaderLen is the length and CRC before a frame's type.
const frameHeaderLen = 8

// maxFrameLen caps a frame's length field: a larger one is damage, not a
// record. Enqueue refuses a record whose frame would be longer (a var for
// the test that checks it).
var maxFrameLen = 1 << 30

// segmentMagic opens every segment file: "TPQLOG" and the format version.
var segmentMagic = []byte("TPQLOG\x00\x01")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTorn reports bytes that end inside a frame: a write cut short.
var errTorn = errors.New("torn frame")

// frame is one decoded frame. For frameAck, seqs holds the acknowledged
// seqs; for frameSeq, seq is the agent's last seq; for frameRecord, rec
// is the record (its body aliases the decoded bytes).
type frame struct {
	typ  byte
	rec  Record
	seq  uint64
	seqs []uint64
}

// beginFrame appends a frame header placeholder and the type to buf and
// returns buf and the header's offset; endFrame fills the header in.
func beginFrame(buf []byte, typ byte) ([]byte, int) {
	at := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, typ)
	return buf, at
}

func endFrame(buf []byte, at int) []byte {
	binary.LittleEndian.PutUint32(buf[at:], uint32(len(buf)-at-frameHeaderLen))
	crc := crc32.Update(crc32.Checksum(buf[at:at+4], castagnoli), castagnoli, buf[at+frameHeaderLen:])
	binary.LittleEndian.PutUint32(buf[at+4:], crc)
	return buf
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// appendRecordFrame appends r (Seq set) as a frameRecord.
func appendRecordFrame(buf []byte, r Record) []byte {
	buf, at := beginFrame(buf, frameRecord)
	buf = appendString(buf, r.Agent)
	buf = binary.AppendUvarint(buf, r.Seq)
	buf = appendString(buf, r.From)
	buf = append(buf, byte(r.Kind))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(r.EnqueuedAt.UnixNano()))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(r.ExpiresAt.UnixNano()))
	buf = append(binary.AppendUvarint(buf, uint64(len(r.Body))), r.Body...)
	return endFrame(buf, at)
}

// appendAckFrame appends a tombstone for agent's seqs.
func appendAckFrame(buf []byte, agent string, seqs []uint64) []byte {
	buf, at := beginFrame(buf, frameAck)
	buf = appendString(buf, agent)
	buf = binary.AppendUvarint(buf, uint64(len(seqs)))
	for _, s := range seqs {
		buf = binary.AppendUvarint(buf, s)
	}
	return endFrame(buf, at)
}

// appendSeqFrame appends agent's last assigned seq.
func appendSeqFrame(buf []byte, agent string, last uint64) []byte {
	buf, at := beginFrame(buf, frameSeq)
	buf = appendString(buf, agent)
	buf = binary.AppendUvarint(buf, last)
	return endFrame(buf, at)
}

// frameLen returns the length of the frame at the start of b, or errTorn
// when b ends before it does, or an error for a length no frame has.
func frameLen(b []byte) (int, error) {
	if len(b) < frameHeaderLen {
		return 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || uint64(n) > uint64(maxFrameLen) {
		return 0, fmt.Errorf("frame length %d", n)
	}
	if uint64(len(b)) < frameHeaderLen+uint64(n) {
		return 0, errTorn
	}
	return frameHeaderLen + int(n), nil
}

// decodeFrame decodes the frame at the start of b and returns it and its
// length. It returns errTorn when b ends inside the frame and another
// error when the frame is damaged (CRC) or malformed.
func decodeFrame(b []byte) (frame, int, error) {
	n, err := frameLen(b)
	if err != nil {
		return frame{}, 0, err
	}
	want := binary.LittleEndian.Uint32(b[4:])
	if got := crc32.Update(crc32.Checksum(b[:4], castagnoli), castagnoli, b[frameHeaderLen:n]); got != want {
		return frame{}, 0, fmt.Errorf("frame CRC %08x, want %08x", got, want)
	}
	d := fieldReader{b: b[frameHeaderLen+1 : n]}
	f := frame{typ: b[frameHeaderLen]}
	switch f.typ {
	case frameRecord:
		f.rec = d.record()
	case frameAck:
		f.rec.Agent = d.string()
		count := d.uvarint()
		if count > uint64(len(d.b)) { // each seq takes at least one byte
			d.fail("ack count %d", count)
		}
		for i := uint64(0); i < count && d.err == nil; i++ {
			f.seqs = append(f.seqs, d.uvarint())
		}
	case frameSeq:
		f.rec.Agent = d.string()
		f.seq = d.uvarint()
	default:
		d.fail("frame type %#x", f.typ)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the fields", len(d.b))
	}
	if d.err == nil && f.rec.Agent == "" {
		d.fail("no agent")
	}
	if d.err != nil {
		return frame{}, 0, d.err
	}
	return f, n, nil
}

// fieldReader decodes a frame's fields; the first error sticks.
type fieldReader struct {
	b   []byte
	err error
}

func (d *fieldReader) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("frame: "+format, args...)
	}
	d.b = nil
}

func (d *fieldReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *fieldReader) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *fieldReader) string() string { return string(d.bytes()) }

func (d *fieldReader) fixed64() int64 {
	if len(d.b) < 8 {
		d.fail("short time field")
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *fieldReader) record() Record {
	var r Record
	r.Agent = d.string()
	r.Seq = d.uvarint()
	r.From = d.string()
	if len(d.b) == 0 {
		d.fail("no kind")
		return Record{}
	}
	r.Kind = Kind(d.b[0])
	d.b = d.b[1:]
	r.EnqueuedAt = time.Unix(0, d.fixed64()).UTC()
	r.ExpiresAt = time.Unix(0, d.fixed64()).UTC()
	r.Body = d.bytes()
	if d.err == nil && (r.Kind > KindHandshake || r.Seq == 0) {
		d.fail("record %s/%d: kind %d", r.Agent, r.Seq, r.Kind)
	}
	return r
}
