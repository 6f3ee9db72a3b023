package queue

import (
	"errors"
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
	opts.SegmentSize = min(opts.SegmentSize, maxSegmentSize)
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
		l.closeSegments()
		lock.Close()
		return nil, err
	}
	return l, nil
}

// load reads the segments in order, or creates the first. With a
// checkpoint that matches them it decodes only the frames after it (and
// checks the CRCs of all); with one that does not, it says why in
// l.ckIgnored and reads them all.
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
	ck, err := readCheckpoint(l.dir)
	if err != nil {
		l.ckIgnored, ck = stale("%v", err), nil
	}
	if ck != nil {
		err := l.loadFrom(ids, ck)
		if !errors.As(err, new(*staleCheckpoint)) {
			return err
		}
		l.ckIgnored = err
		l.closeSegments()
		l.index, l.ckFresh, l.ckGone = newIndex(), false, false
	}
	return l.loadFrom(ids, nil)
}

// loadFrom opens the segments ids, installs ck (when not nil) and reads
// the segments' frames, decoding those ck does not cover.
func (l *Log) loadFrom(ids []uint64, ck *checkpoint) error {
	for _, id := range ids {
		seg, err := recordlog.Open(l.dir, id)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
	}
	if ck != nil {
		if err := l.install(ck); err != nil {
			return err
		}
		l.ckFresh = true
	}
	var buf []byte // the index keeps nothing of a frame's bytes: strings are copied
	for i, seg := range l.segs {
		o := recordlog.ScanOptions{Last: i == len(ids)-1, Now: l.opts.now(), Buf: &buf}
		cut, err := recordlog.Scan(seg, o, l.decodeEntry(seg, ck), l.applyCommit)
		if err != nil {
			return err
		}
		if cut != (recordlog.Cut{}) {
			l.cuts = append(l.cuts, cut)
			l.ckFresh = false
			if ck != nil && seg.ID == ck.pos.seg && cut.Offset < ck.pos.off {
				return stale("segment %d was cut at %d, before its end %d", seg.ID, cut.Offset, ck.pos.off)
			}
		}
	}
	if err := l.checkGone(); err != nil {
		return err
	}
	l.dropDead()
	l.index.trim()
	l.index.senders.sweep()
	return nil
}

// closeSegments closes the open segment files and forgets them.
func (l *Log) closeSegments() {
	for _, s := range l.segs {
		s.File.Close()
	}
	l.segs = nil
}

// replayed is one frame read at open, with where it is; a frame the
// checkpoint covers is only checked (covered).
type replayed struct {
	frame
	seg     *recordlog.Segment
	off     int64
	n       int
	covered bool
}

// decodeEntry returns the decoder of seg's frames for recordlog.Scan;
// the frames ck covers are not decoded (recordlog checked their CRCs).
func (l *Log) decodeEntry(seg *recordlog.Segment, ck *checkpoint) func(recordlog.Entry) (replayed, error) {
	return func(e recordlog.Entry) (replayed, error) {
		if ck != nil && coveredFrame(ck.pos, seg.ID, e.Off) {
			return replayed{covered: true}, nil
		}
		f, err := decodePayload(e.Type, e.Fields)
		return replayed{frame: f, seg: seg, off: e.Off, n: e.N}, err
	}
}

// applyCommit replays one commit's frames into the index.
func (l *Log) applyCommit(frames []replayed) {
	for _, f := range frames {
		if !f.covered {
			l.ckFresh = false
			l.apply(f.seg, f.frame, f.off, f.n)
		}
	}
}

// apply replays one frame into the index.
func (l *Log) apply(seg *recordlog.Segment, f frame, off int64, n int) {
	a := l.index.agent(f.rec.Agent)
	switch f.typ {
	case frameRecord:
		r := f.rec
		l.index.add(a, logEntry{
			seq: r.Seq, seg: uint32(seg.ID), off: entryOffset(off), n: uint32(n), size: uint32(len(r.Body)), kind: r.Kind,
			expires: r.ExpiresAt.UnixNano(),
		}, r.From)
	case frameAck:
		l.index.remove(a, f.seqs)
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
