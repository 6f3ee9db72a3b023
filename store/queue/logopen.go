package queue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/torpor-dev/torpor/store"
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
	if err := prepareLogDir(dir, opts.ImportBolt); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, index: newIndex(), lock: lock}
	l.commits = newLogCommits(l, opts.MaxBatchSize)
	if err := l.load(); err != nil {
		for _, s := range l.segs {
			s.f.Close()
		}
		lock.Close()
		return nil, err
	}
	return l, nil
}

// load reads the segments in order, or creates the first.
func (l *Log) load() error {
	ids, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		seg, err := createSegment(l.dir, 1)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		return l.writeMagic(seg)
	}
	for i, id := range ids {
		if err := l.replay(id, i == len(ids)-1); err != nil {
			return err
		}
	}
	l.dropDead()
	return nil
}

// segmentName is the file name of segment id: 16 hex digits and ".log",
// so that names sort as ids do.
func segmentName(id uint64) string { return fmt.Sprintf("%016x.log", id) }

// listSegments returns the ids of the segment files in dir, in order.
func listSegments(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("queue: reading the log directory: %w", err)
	}
	var ids []uint64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".log")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(name, 16, 64)
		if err != nil || len(name) != 16 || id == 0 {
			return nil, &store.CorruptError{Path: filepath.Join(dir, de.Name()), Problems: []string{"not a segment name"}}
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// createSegment creates segment id in dir and makes its name durable.
func createSegment(dir string, id uint64) (*segment, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(id)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue: creating a segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &segment{id: id, f: f}, nil
}

// syncDir makes dir's entries (created, renamed or removed files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("queue: syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("queue: syncing %s: %w", dir, err)
	}
	return nil
}

// writeMagic writes the segment header of an empty (or torn at creation)
// segment and syncs it.
func (l *Log) writeMagic(seg *segment) error {
	if _, err := seg.f.WriteAt(segmentMagic, 0); err != nil {
		return fmt.Errorf("queue: writing segment %d: %w", seg.id, err)
	}
	if err := seg.f.Truncate(int64(len(segmentMagic))); err != nil {
		return fmt.Errorf("queue: writing segment %d: %w", seg.id, err)
	}
	seg.size, seg.alloc = int64(len(segmentMagic)), int64(len(segmentMagic))
	return datasync(seg.f)
}

// replay reads segment id into the index. Its frames end at the first
// zero length (the zeros written ahead) or at the end of the file. In the
// last segment a frame that is cut short or fails its CRC ends them too,
// and when anything but zeros follows the frames the file is truncated
// there (a torn write may have reached later pages and not earlier ones).
// In any other segment both are corruption.
func (l *Log) replay(id uint64, last bool) error {
	path := filepath.Join(l.dir, segmentName(id))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("queue: opening a segment: %w", err)
	}
	seg := &segment{id: id, f: f}
	l.segs = append(l.segs, seg)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("queue: reading a segment: %w", err)
	}
	if !bytes.HasPrefix(data, segmentMagic) {
		if last && headerUnwritten(data) {
			return l.writeMagic(seg)
		}
		return &store.CorruptError{Path: path, Problems: []string{"no segment header"}}
	}
	off, problem := len(segmentMagic), ""
	for off < len(data) && !endOfFrames(data[off:]) {
		fr, n, err := decodeFrame(data[off:])
		if err != nil {
			problem = fmt.Sprintf("frame at offset %d: %v", off, err)
			break
		}
		l.apply(seg, fr, int64(off), n)
		off += n
	}
	if problem == "" && allZero(data[off:]) {
		seg.size, seg.alloc = int64(off), int64(len(data))
		return nil
	}
	if !last {
		if problem == "" {
			problem = fmt.Sprintf("bytes after the last frame at offset %d", off)
		}
		return &store.CorruptError{Path: path, Problems: []string{problem}}
	}
	return l.cutTail(seg, int64(off))
}

// headerUnwritten reports whether a segment without its whole header is
// one whose first commit never completed: empty, cut inside the header,
// or zeros after what was written of it (a power cut after the file's
// length was made durable and before its data). The header goes to disk
// in the same write and fdatasync as the segment's first frames, so such
// a segment holds nothing that was acknowledged. Any other byte there is
// corruption.
func headerUnwritten(data []byte) bool {
	n := 0
	for n < len(data) && n < len(segmentMagic) && data[n] == segmentMagic[n] {
		n++
	}
	return allZero(data[n:])
}

// endOfFrames reports whether b starts with no frame: a zero length, or
// fewer bytes than a length, all zero.
func endOfFrames(b []byte) bool {
	if len(b) < 4 {
		return allZero(b)
	}
	return b[0]|b[1]|b[2]|b[3] == 0
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cutTail truncates the last segment at off, where its frames end.
func (l *Log) cutTail(seg *segment, off int64) error {
	if err := seg.f.Truncate(off); err != nil {
		return fmt.Errorf("queue: cutting the torn tail of segment %d: %w", seg.id, err)
	}
	seg.size, seg.alloc = off, off
	return datasync(seg.f)
}

// apply replays one frame into the index.
func (l *Log) apply(seg *segment, f frame, off int64, n int) {
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
func (l *Log) rotate(c *logBatch) (*segment, error) {
	seg, err := createSegment(l.dir, l.segs[len(l.segs)-1].id+1)
	if err != nil {
		return nil, err
	}
	c.buf = append(c.buf, segmentMagic...)
	for _, a := range l.index.agents {
		c.buf = appendSeqFrame(c.buf, a.name, a.c.last)
	}
	l.segs = append(l.segs, seg)
	return seg, nil
}

// dropDead deletes the oldest segments while they hold no live record
// and the commit that emptied them is synced (deadAt). Only a prefix is
// deleted: a later segment may hold the tombstones of an earlier one's
// records. The current segment is never deleted. A failed
// removal is left for the next commit. l.mu is held.
func (l *Log) dropDead() {
	for len(l.segs) > 1 && l.segs[0].live == 0 && l.segs[0].deadAt <= l.durable {
		s := l.segs[0]
		if err := os.Remove(filepath.Join(l.dir, segmentName(s.id))); err != nil {
			break
		}
		s.f.Close()
		l.segs = l.segs[1:]
	}
	live := 0
	for _, s := range l.segs {
		live += s.live
	}
	l.index.compactExpiry(live)
}
