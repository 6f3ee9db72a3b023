package store

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// Uint returns the big-endian uint64 under k in b, or 0 if k is absent
// or does not hold 8 bytes.
func Uint(b *bolt.Bucket, k []byte) uint64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// PutUint puts v under k in b as 8 big-endian bytes, the form Uint reads.
func PutUint(b *bolt.Bucket, k []byte, v uint64) error {
	return b.Put(k, binary.BigEndian.AppendUint64(nil, v))
}
