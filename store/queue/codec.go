package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// The first byte of every record value (see the package doc's on-disk
// layout): version 1 is the CBOR array alone, written before records
// carried a checksum and still read; version 2, written now, puts a
// CRC-32C (Castagnoli) of the record before it.
const (
	recordVersion1 = 1
	recordVersion  = 2
	// checksumLen is the CRC's length after the version byte.
	checksumLen = 4
)

// recordCRC is the CRC-32C table (RFC 3720, Section 12.1, the polynomial
// the record log's frames use too).
var recordCRC = crc32.MakeTable(crc32.Castagnoli)

// errChecksum is wrapped by decodeRecord's error when a version-2 record
// decodes but fails its checksum: a byte of it changed on disk.
var errChecksum = errors.New("checksum mismatch")

// recordSum is the CRC-32C of a record's agent, seq and CBOR bytes:
// covering the key too, a record read under another key fails it.
func recordSum(agent string, seq uint64, cborBytes []byte) uint32 {
	crc := crc32.Update(0, recordCRC, binary.BigEndian.AppendUint64(nil, seq))
	crc = crc32.Update(crc, recordCRC, []byte(agent))
	return crc32.Update(crc, recordCRC, cborBytes)
}

// diskRecord is the CBOR array stored after the version byte. Agent and Seq
// are not stored: the bucket and the key hold them.
type diskRecord struct {
	_          struct{} `cbor:",toarray"`
	From       string
	Kind       Kind
	EnqueuedAt int64 // Unix ns
	ExpiresAt  int64 // Unix ns
	Body       []byte
}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{Sort: cbor.SortCoreDeterministic}).EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{ExtraReturnErrors: cbor.ExtraDecErrorUnknownField}).DecMode(); err != nil {
		panic(err)
	}
}

// encodeRecord returns the stored form of r, to be kept under r.Agent at
// seq.
func encodeRecord(r Record, seq uint64) ([]byte, error) {
	v, err := encodeUnsealed(r)
	if err != nil {
		return nil, err
	}
	sealRecord(v, r.Agent, seq)
	return v, nil
}

// sealRecord writes into v, from encodeUnsealed, the checksum it has
// under agent at seq (known only inside the transaction that stores it).
func sealRecord(v []byte, agent string, seq uint64) {
	binary.BigEndian.PutUint32(v[1:], recordSum(agent, seq, v[1+checksumLen:]))
}

// encodeUnsealed returns the stored form of r with a zero checksum.
func encodeUnsealed(r Record) ([]byte, error) {
	b, err := encMode.Marshal(diskRecord{
		From:       r.From,
		Kind:       r.Kind,
		EnqueuedAt: r.EnqueuedAt.UnixNano(),
		ExpiresAt:  r.ExpiresAt.UnixNano(),
		Body:       r.Body,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: encoding record: %w", err)
	}
	v := make([]byte, 1+checksumLen, 1+checksumLen+len(b))
	v[0] = recordVersion
	return append(v, b...), nil
}

// decodeRecord parses a stored record of agent at seq. The body is copied,
// so the result stays valid after the transaction ends. A version-2
// record that decodes but fails its checksum is returned with an error
// wrapping ErrCorrupt and errChecksum: its fields may be wrong, but a
// caller deleting it may use them.
func decodeRecord(agent string, seq uint64, v []byte) (Record, error) {
	var sumErr error
	switch {
	case len(v) > 0 && v[0] == recordVersion1:
		v = v[1:]
	case len(v) >= 1+checksumLen && v[0] == recordVersion:
		if got := recordSum(agent, seq, v[1+checksumLen:]); got != binary.BigEndian.Uint32(v[1:]) {
			sumErr = fmt.Errorf("%w: record %s/%d: %w (stored %08x, computed %08x)", ErrCorrupt, agent, seq, errChecksum, binary.BigEndian.Uint32(v[1:]), got)
		}
		v = v[1+checksumLen:]
	default:
		return Record{}, fmt.Errorf("%w: record %s/%d: unknown version", ErrCorrupt, agent, seq)
	}
	var d diskRecord
	if err := decMode.Unmarshal(v, &d); err != nil {
		return Record{}, fmt.Errorf("%w: record %s/%d: %v", ErrCorrupt, agent, seq, err)
	}
	if d.Kind > KindHandshake {
		return Record{}, fmt.Errorf("%w: record %s/%d: kind %d", ErrCorrupt, agent, seq, d.Kind)
	}
	body := make([]byte, len(d.Body))
	copy(body, d.Body)
	return Record{
		Seq:        seq,
		Agent:      agent,
		From:       d.From,
		Kind:       d.Kind,
		EnqueuedAt: time.Unix(0, d.EnqueuedAt).UTC(),
		ExpiresAt:  time.Unix(0, d.ExpiresAt).UTC(),
		Body:       body,
	}, sumErr
}

// counters are an agent's per-agent totals, kept exact in the transaction
// that changes the records.
type counters struct {
	last       uint64 // last assigned seq
	n, bytes   uint64 // live records and their body bytes
	hn, hbytes uint64 // the KindHandshake subset
}

const countersLen = 5 * 8

func (c counters) marshal() []byte {
	b := make([]byte, 0, countersLen)
	for _, v := range []uint64{c.last, c.n, c.bytes, c.hn, c.hbytes} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func parseCounters(agent string, b []byte) (counters, error) {
	if b == nil {
		return counters{}, nil
	}
	if len(b) != countersLen {
		return counters{}, fmt.Errorf("%w: counters of %s: %d bytes", ErrCorrupt, agent, len(b))
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[8*i:]) }
	return counters{last: u(0), n: u(1), bytes: u(2), hn: u(3), hbytes: u(4)}, nil
}

// add adds (sign +1) or removes (sign -1) r from c.
func (c *counters) add(r Record, sign int) {
	n, size := uint64(1), uint64(len(r.Body))
	if sign < 0 {
		n, size = -n, -size // two's complement subtraction
	}
	c.n += n
	c.bytes += size
	if r.Kind == KindHandshake {
		c.hn += n
		c.hbytes += size
	}
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func getSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// expiryKey orders the expiry index by time: the Unix ns with the sign bit
// flipped sorts correctly as unsigned big-endian bytes.
func expiryKey(expires time.Time, seq uint64, agent string) []byte {
	k := make([]byte, 0, 16+len(agent))
	k = binary.BigEndian.AppendUint64(k, uint64(expires.UnixNano())^(1<<63))
	k = binary.BigEndian.AppendUint64(k, seq)
	return append(k, agent...)
}

func parseExpiryKey(k []byte) (expires time.Time, seq uint64, agent string, err error) {
	if len(k) < 17 {
		return time.Time{}, 0, "", fmt.Errorf("%w: expiry index key of %d bytes", ErrCorrupt, len(k))
	}
	ns := int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
	return time.Unix(0, ns).UTC(), binary.BigEndian.Uint64(k[8:]), string(k[16:]), nil
}
