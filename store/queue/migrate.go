package queue

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// layoutVersion is the meta "version" value this code writes. It reads
// version 1 too, migrating it when the file is opened (migrateV1).
const layoutVersion = 2

// setLayout writes the layout version into a new file, migrates a file of
// an older version it knows, and refuses one it does not.
func setLayout(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	switch v := meta.Get(keyVersion); {
	case v == nil:
	case bytes.Equal(v, []byte{layoutVersion}):
		return nil
	case bytes.Equal(v, []byte{1}):
		if err := migrateV1(tx); err != nil {
			return fmt.Errorf("migrating layout 1 to %d: %w", layoutVersion, err)
		}
	default:
		return fmt.Errorf("%w: layout version %x, want %d", ErrCorrupt, v, layoutVersion)
	}
	return meta.Put(keyVersion, []byte{layoutVersion})
}

// migrateV1 turns a version 1 file into version 2. Version 1 kept one
// uint64 per peer (its record count); version 2 keeps the count and the
// body bytes, which the per-peer byte bound needs. The peer buckets are
// rebuilt from the records themselves, in the transaction that sets the
// new version, so a crash leaves either layout whole.
func migrateV1(tx *bolt.Tx) error {
	agents := tx.Bucket(bucketAgents)
	if agents == nil {
		return nil
	}
	var names [][]byte
	err := agents.ForEachBucket(func(k []byte) error {
		names = append(names, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := rebuildPeers(agents.Bucket(name), string(name)); err != nil {
			return err
		}
	}
	return nil
}

// rebuildPeers recomputes agent's peer bucket from its records.
func rebuildPeers(ab *bolt.Bucket, agent string) error {
	if ab.Bucket(bucketPeers) != nil {
		if err := ab.DeleteBucket(bucketPeers); err != nil {
			return err
		}
	}
	peers, err := ab.CreateBucket(bucketPeers)
	if err != nil {
		return err
	}
	return eachRecord(ab, agent, func(r Record) error { return addPeer(peers, r, +1) })
}

// eachRecord calls fn with each record in agent's bucket ab, in sequence
// order; a record it cannot decode is ErrCorrupt.
func eachRecord(ab *bolt.Bucket, agent string, fn func(Record) error) error {
	recs := ab.Bucket(bucketRecords)
	if recs == nil {
		return nil
	}
	return recs.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: record key of %d bytes under %s", ErrCorrupt, len(k), agent)
		}
		r, err := decodeRecord(agent, getSeq(k), v)
		if err != nil {
			return err
		}
		return fn(r)
	})
}
