package queue

import (
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// exportBolt writes every agent's last seq and records as frames.
func exportBolt(tx *bolt.Tx, w *recordlog.Writer) error {
	var buf []byte
	return tx.Bucket(bucketAgents).ForEachBucket(func(k []byte) error {
		agent := string(k)
		ab := tx.Bucket(bucketAgents).Bucket(k)
		c, err := parseCounters(agent, ab.Get(keyCounters))
		if err != nil {
			return err
		}
		buf = appendSeqFrame(buf[:0], agent, c.last)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		return eachRecord(ab, agent, func(r Record) error {
			buf = appendRecordFrame(buf[:0], r)
			_, err := w.Write(buf)
			return err
		})
	})
}
