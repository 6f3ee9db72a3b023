package queue

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// OpenLog opens (creating if needed) the record log in directory dir: it
// reads every segment, rebuilding the index, cuts a torn or damaged tail
// of the last segment (a write a crash cut short: its callers were never
// told their records were stored), and refuses with a *store.CorruptError
// a damaged frame anywhere else. With o.ImportBolt it first imports a bbolt
// queue file (see LogOptions). On Linux it holds a lock on dir/LOCK until
// Close, so a second process's OpenLog fails.
func OpenLog(dir string, o *LogOptions) (*Log, error) {
	opts := LogOptions{}
	if o != nil {
		opts = *o
	}
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = defaultSegmentSize
	}
	if opts.ZeroAhead <= 0 {
		opts.ZeroAhead = defaultZeroAhead
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := recordlog.PrepareDir(dir, opts.ImportBolt, func(w *recordlog.Writer) error { return exportBoltFile(opts.ImportBolt, w) }); err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	lock, err := recordlog.Lock(dir)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	l := &Log{dir: dir, opts: opts, index: newIndex(), lock: lock}
	l.commits = newLogCommits(l, opts.MaxBatchSize)
	if err := l.load(); err != nil {
		for _, s := range l.segs {
			s.File.Close()
		}
		lock.Close()
		return nil, err
	}
	return l, nil
}

// load reads the segments in order, or creates the first.
func (l *Log) load() error {
	ids, err := recordlog.List(l.dir)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		seg, err := recordlog.Create(l.dir, 1)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		return seg.WriteHeader()
	}
	for i, id := range ids {
		seg, err := recordlog.Open(l.dir, id)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		cut, err := recordlog.Scan(seg, recordlog.ScanOptions{Last: i == len(ids)-1, Now: l.opts.now()}, l.decodeEntry(seg), l.applyCommit)
		if err != nil {
			return err
		}
		if cut != (recordlog.Cut{}) {
			l.cuts = append(l.cuts, cut)
		}
	}
	l.dropDead()
	return nil
}

// replayed is one frame read at open, with where it is.
type replayed struct {
	frame
	seg *recordlog.Segment
	off int64
	n   int
}

// decodeEntry returns the decoder of seg's frames for recordlog.Scan.
func (l *Log) decodeEntry(seg *recordlog.Segment) func(recordlog.Entry) (replayed, error) {
	return func(e recordlog.Entry) (replayed, error) {
		f, err := decodePayload(e.Type, e.Fields)
		return replayed{frame: f, seg: seg, off: e.Off, n: e.N}, err
	}
}

// applyCommit replays one commit's frames into the index.
func (l *Log) applyCommit(frames []replayed) {
	for _, f := range frames {
		l.apply(f.seg, f.frame, f.off, f.n)
	}
}

// apply replays one frame into the index.
func (l *Log) apply(seg *recordlog.Segment, f frame, off int64, n int) {
	a := l.index.agent(f.rec.Agent)
	switch f.typ {
	case frameRecord:
		r := f.rec
		l.index.add(a, logEntry{
			seq: r.Seq, seg: seg, off: off, n: n, size: len(r.Body), kind: r.Kind,
			from: r.From, expires: r.ExpiresAt.UnixNano(),
		})
	case frameAck:
		for _, s := range f.seqs {
			l.index.remove(a, s)
		}
	case frameSeq:
		a.c.last = max(a.c.last, f.seq)
	}
}

// rotate starts segment n+1 for commit c: its header and every agent's
// last seq open c's buffer. l.mu is held.
func (l *Log) rotate(c *logBatch) (*recordlog.Segment, error) {
	seg, err := recordlog.Create(l.dir, l.segs[len(l.segs)-1].ID+1)
	if err != nil {
		return nil, err
	}
	c.buf = append(c.buf, recordlog.Magic...)
	for _, a := range l.index.agents {
		c.buf = appendSeqFrame(c.buf, a.name, a.c.last)
	}
	l.segs = append(l.segs, seg)
	return seg, nil
}

// dropDead deletes the oldest segments while they hold no live record
// and the commit that emptied them is synced (recordlog.DropDead). l.mu
// is held.
func (l *Log) dropDead() {
	l.segs = recordlog.DropDead(l.segs, l.durable)
	live := 0
	for _, s := range l.segs {
		live += s.Live
	}
	l.index.compactExpiry(live)
}

// exportBoltFile writes every agent's last seq and records of the bbolt
// queue at path as frames (the import of LogOptions.ImportBolt).
func exportBoltFile(path string, w *recordlog.Writer) error {
	src, err := OpenBolt(path, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	return src.db.View(func(tx *bolt.Tx) error { return exportBolt(tx, w) })
}
