package recordlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderLen is the length and CRC before a frame's type.
const HeaderLen = 8

// MaxFrameLen caps a frame's length field: a larger one is damage, not a
// frame. Its user refuses to write a longer frame (a var for the tests
// that check it).
var MaxFrameLen = 1 << 30

// Magic opens every segment file this version writes: "TPQLOG" and the
// format version, 2: every commit ends with a commit frame (commit.go).
var Magic = []byte("TPQLOG\x00\x02")

// MagicV1 opens the segment files of format version 1, whose commits have
// no commit frame. They are still read (Scan); appends go to a new
// segment.
var MagicV1 = []byte("TPQLOG\x00\x01")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrTorn reports bytes that end inside a frame: a write cut short.
var ErrTorn = errors.New("torn frame")

// Begin appends a frame header placeholder and typ to buf and returns buf
// and the header's offset; End fills the header in.
func Begin(buf []byte, typ byte) ([]byte, int) {
	at := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, typ)
	return buf, at
}

// End completes the frame begun at at: its length and CRC.
func End(buf []byte, at int) []byte {
	binary.LittleEndian.PutUint32(buf[at:], uint32(len(buf)-at-HeaderLen))
	crc := crc32.Update(crc32.Checksum(buf[at:at+4], castagnoli), castagnoli, buf[at+HeaderLen:])
	binary.LittleEndian.PutUint32(buf[at+4:], crc)
	return buf
}

// AppendString appends s as a field: uvarint length and bytes.
func AppendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// AppendBytes appends b as a field: uvarint length and bytes.
func AppendBytes(buf []byte, b []byte) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(b))), b...)
}

// Len returns the length of the frame at the start of b, or ErrTorn when
// b ends before it does, or an error for a length no frame has.
func Len(b []byte) (int, error) {
	if len(b) < HeaderLen {
		return 0, ErrTorn
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || uint64(n) > uint64(MaxFrameLen) {
		return 0, fmt.Errorf("frame length %d", n)
	}
	if uint64(len(b)) < HeaderLen+uint64(n) {
		return 0, ErrTorn
	}
	return HeaderLen + int(n), nil
}

// Decode checks the frame at the start of b and returns its type, its
// fields (aliasing b) and its length. It returns ErrTorn when b ends
// inside the frame and another error when the frame is damaged (length,
// CRC).
func Decode(b []byte) (typ byte, fields []byte, n int, err error) {
	n, err = Len(b)
	if err != nil {
		return 0, nil, 0, err
	}
	want := binary.LittleEndian.Uint32(b[4:])
	if got := crc32.Update(crc32.Checksum(b[:4], castagnoli), castagnoli, b[HeaderLen:n]); got != want {
		return 0, nil, 0, fmt.Errorf("frame CRC %08x, want %08x", got, want)
	}
	return b[HeaderLen], b[HeaderLen+1 : n], n, nil
}

// Fields decodes a frame's fields; the first error sticks.
type Fields struct {
	b   []byte
	err error
}

// NewFields reads b.
func NewFields(b []byte) *Fields { return &Fields{b: b} }

// Err returns the first error.
func (d *Fields) Err() error { return d.err }

// Left returns how many bytes are not read yet.
func (d *Fields) Left() int { return len(d.b) }

// Fail records an error (the first sticks) and stops reading.
func (d *Fields) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("frame: "+format, args...)
	}
	d.b = nil
}

// Uvarint reads a uvarint.
func (d *Fields) Uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.Fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Bytes reads a byte string (aliasing the frame).
func (d *Fields) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.Fail("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// String reads a string.
func (d *Fields) String() string { return string(d.Bytes()) }

// Byte reads one byte.
func (d *Fields) Byte() byte {
	if len(d.b) == 0 {
		d.Fail("short byte field")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// Fixed64 reads an int64 LE.
func (d *Fields) Fixed64() int64 {
	if len(d.b) < 8 {
		d.Fail("short fixed field")
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}
