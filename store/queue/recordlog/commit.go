package recordlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// TypeCommit is the type of the frame that ends every commit of a version
// 2 segment; a user's frame types must differ. Its fields are the length
// of the commit's bytes before it (uvarint: from the end of the commit
// before it, or from the start of the file, header included) and their
// CRC-32C (uint32 LE). A commit is the bytes one write and one fdatasync
// put on disk, and its callers are told it is stored only after both; so
// a valid commit frame says that what comes before it was acknowledged,
// and what follows the last one may be a write a crash cut short.
//
// This is the scheme of etcd's WAL (a CRC chained through the records,
// and a torn write told from damage by the zeros of sectors it never
// wrote: https://github.com/etcd-io/etcd/blob/main/server/storage/wal/decoder.go)
// and Kafka's log recovery (only what follows the recovery point is
// checked and may be truncated), with the acknowledged end of the log
// written in the log itself.
const TypeCommit = 'C'

// AppendCommit appends the commit frame that ends the commit made of
// buf[start:].
func AppendCommit(buf []byte, start int) []byte {
	body := buf[start:]
	crc := crc32.Checksum(body, castagnoli)
	buf, at := Begin(buf, TypeCommit)
	buf = binary.AppendUvarint(buf, uint64(len(body)))
	buf = binary.LittleEndian.AppendUint32(buf, crc)
	return End(buf, at)
}

// checkCommit checks the fields of a commit frame at offset off of data
// against the commit it ends, which began at start.
func checkCommit(data []byte, fields []byte, start, off int) error {
	d := NewFields(fields)
	n := d.Uvarint()
	var crc uint32
	if d.Left() == 4 {
		crc = binary.LittleEndian.Uint32(fields[len(fields)-4:])
	} else {
		d.Fail("commit frame of %d bytes", len(fields))
	}
	switch {
	case d.Err() != nil:
		return d.Err()
	case n != uint64(off-start):
		return fmt.Errorf("commit frame for %d bytes, %d since the commit before", n, off-start)
	case crc32.Checksum(data[start:off], castagnoli) != crc:
		return fmt.Errorf("commit CRC mismatch over offsets %d to %d", start, off)
	}
	return nil
}

// validCommitAfter reports whether a commit frame that passes its own
// CRC starts anywhere in data after from: then the bytes at from were
// followed by an acknowledged commit, and are damage, not a torn write.
// (The commit's CRC is not checked: the damage may be inside it.)
func validCommitAfter(data []byte, from int) (at, start int, ok bool) {
	for i := from + 1; i+HeaderLen < len(data); i++ {
		if data[i+HeaderLen] != TypeCommit {
			continue
		}
		typ, fields, _, err := Decode(data[i:])
		if err != nil || typ != TypeCommit {
			continue
		}
		d := NewFields(fields)
		if n := d.Uvarint(); d.Err() == nil && d.Left() == 4 && n <= uint64(i) {
			return i, i - int(n), true
		}
	}
	return 0, 0, false
}
