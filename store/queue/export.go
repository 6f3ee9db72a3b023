package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// The names of the embedded queue's files in a relay's data directory:
// the bbolt queue (Bolt) and the record log's directory (Log).
const (
	BoltFile = "queue.db"
	LogDir   = "queue.log"
)

// OpenDir opens the embedded queue that the relay data directory dataDir
// holds, whichever the engine: the record log in LogDir when it is there,
// else the bbolt file BoltFile. It creates nothing: with neither, it
// returns an error wrapping fs.ErrNotExist. It imports nothing either
// (the relay imports BoltFile into a new log; OpenLog's
// LogOptions.ImportBolt). For tools and tests that read a stopped relay's
// queue.
func OpenDir(dataDir string) (Store, error) {
	dir, db := filepath.Join(dataDir, LogDir), filepath.Join(dataDir, BoltFile)
	if _, err := os.Stat(dir); err == nil {
		return OpenLog(dir, nil)
	}
	if _, err := os.Stat(db); err != nil {
		return nil, fmt.Errorf("queue: %s holds no queue (%s or %s/): %w", dataDir, BoltFile, LogDir, fs.ErrNotExist)
	}
	return OpenBolt(db, nil)
}

// ExportBolt writes a new bbolt queue file at path (OpenBolt's) holding
// the record log in dir: every live record with its seq, and every
// agent's last seq, so that seqs are not reused. It is the way back from
// the record log to the bbolt engine, the reverse of LogOptions.ImportBolt
// (which it round-trips with). It refuses when path exists, and writes
// through a temporary file renamed into place once synced, so path is
// either whole or missing. The log must not be open elsewhere (OpenLog's
// lock); it is not changed. It returns how many records it wrote.
func ExportBolt(dir, path string) (int, error) {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("queue: exporting the record log to %s: the file exists (err %v)", path, err)
	}
	if _, err := os.Stat(dir); err != nil {
		return 0, fmt.Errorf("queue: exporting the record log: %w", err)
	}
	l, err := OpenLog(dir, nil)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	tmp := path + ".export"
	os.Remove(tmp)
	n, err := l.exportTo(tmp)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = recordlog.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("queue: exporting the record log to %s: %w", path, err)
	}
	return n, nil
}

// exportTo writes l into a new bbolt queue at path, one transaction per
// agent, synced once at the end.
func (l *Log) exportTo(path string) (int, error) {
	b, err := OpenBolt(path, nil)
	if err != nil {
		return 0, err
	}
	b.db.NoSync = true
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := make([]string, 0, len(l.index.agents))
	for name := range l.index.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	n := 0
	for _, name := range names {
		a := l.index.agents[name]
		err = b.db.Update(func(tx *bolt.Tx) error { return l.exportAgent(tx, a) })
		if err != nil {
			b.Close()
			return 0, fmt.Errorf("agent %s: %w", name, err)
		}
		n += len(a.live)
	}
	b.db.NoSync = false
	err = b.db.Sync()
	return n, errors.Join(err, b.Close())
}

// exportAgent writes a's records, their expiry index entries and peer
// counts, and its counters, into tx.
func (l *Log) exportAgent(tx *bolt.Tx, a *logAgent) error {
	ab, err := tx.Bucket(bucketAgents).CreateBucket([]byte(a.name))
	if err != nil {
		return err
	}
	recs, err := ab.CreateBucket(bucketRecords)
	if err != nil {
		return err
	}
	peers, err := ab.CreateBucket(bucketPeers)
	if err != nil {
		return err
	}
	recs.FillPercent = 1
	c := counters{last: a.c.last}
	for _, e := range a.live {
		r, err := l.readRecord(e)
		if err != nil {
			return err
		}
		val, err := encodeRecord(r, r.Seq)
		if err == nil {
			err = recs.Put(seqKey(r.Seq), val)
		}
		if err == nil {
			err = tx.Bucket(bucketExpiry).Put(expiryKey(r.ExpiresAt, r.Seq, r.Agent), nil)
		}
		if err == nil {
			err = addPeer(peers, r, +1)
		}
		if err != nil {
			return err
		}
		c.add(r, +1)
	}
	return ab.Put(keyCounters, c.marshal())
}
