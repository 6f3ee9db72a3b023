package queue

import (
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue/internal/groupcommit"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// newLogCommits returns the record log's group commit
// (internal/groupcommit). A leader hands on leadership once its batch is
// written, before its sync, and the next leader waits in Log.waitSlot for
// that commit (or, with LogOptions.OverlapSyncs, only for the one before
// it).
//
// A call's function runs exactly once, under the index lock, and changes
// the index and appends its frames to the commit's buffer; it cannot fail
// (a refused enqueue is a result). What can fail is the write or the sync
// of the buffer, and then every call of the batch gets the error and the
// Log refuses every later call (see Log.commit).
func newLogCommits(l *Log, max int) *groupcommit.Group[logWrite] {
	return &groupcommit.Group[logWrite]{
		Max:  max,
		Wait: l.waitSlot,
		Commit: func(batch []logWrite, handOff func()) []error {
			finish := l.commit(batch)
			handOff()
			err := finish()
			errs := make([]error, len(batch))
			for i := range errs {
				errs[i] = err
			}
			return errs
		},
	}
}

// logWrite is one call's part of a commit.
type logWrite = func(*logBatch)

// waitSlot waits until the previous commit is finished, so that a batch
// gathers the calls that arrive during one whole commit. With
// LogOptions.OverlapSyncs it waits only for the one before that: the next
// batch is then built and written while the previous one syncs.
func (l *Log) waitSlot() {
	l.mu.RLock()
	ch := l.last
	if l.opts.OverlapSyncs {
		ch = l.lastPrev
	}
	l.mu.RUnlock()
	if ch != nil {
		<-ch
	}
}

// logBatch is one commit being built: the frames of its calls, to be
// appended to seg at base.
type logBatch struct {
	l    *Log
	seg  *recordlog.Segment
	base int64
	buf  []byte
	gen  uint64
	// alloc is the segment's length before this commit's write.
	alloc int64
	// hdr is the length of the segment header at the start of buf (a
	// commit that starts a segment), which its commit frame does not
	// count.
	hdr int
	// moves are the records this commit copies forward (moveForward).
	moves []logMove
	// done is closed when the commit is finished; prev is the previous
	// commit's done (nil when it had finished when this one began).
	done, prev chan struct{}
}

// logReserve is the room a full file system leaves to tombstones: once
// the log could not write zeros ahead (recordlog.Segment.Short), a record
// is refused (ErrNoSpace) unless this much stays after it, so that
// devices can still drain and acknowledge.
const logReserve = 64 << 10

// roomFor reports whether a record frame of about n bytes may go into c.
func (c *logBatch) roomFor(n int) bool {
	return !c.seg.Short || c.seg.Alloc-c.base-int64(len(c.buf)+n) >= logReserve
}

// append adds r (Seq set) to the index and its frame to the commit.
func (c *logBatch) append(a *logAgent, r Record) {
	start := len(c.buf)
	c.buf = appendRecordFrame(c.buf, r)
	c.l.index.add(a, logEntry{
		seq: r.Seq, seg: uint32(c.seg.ID), off: entryOffset(c.base + int64(start)), n: uint32(len(c.buf) - start),
		size: uint32(len(r.Body)), kind: r.Kind, expires: r.ExpiresAt.UnixNano(),
	}, r.From)
}

// tombstone adds the frame deleting agent's seqs, which the caller took out
// of the index.
func (c *logBatch) tombstone(agent string, seqs []uint64) {
	if len(seqs) > 0 {
		c.buf = appendAckFrame(c.buf, agent, seqs)
	}
}

// purge takes the records expired at now out of the index, adds their
// tombstones and returns how many.
func (c *logBatch) purge(now time.Time) int {
	n := 0
	c.l.index.expired(now.UnixNano(), func(a *logAgent, seqs []uint64) {
		c.tombstone(a.name, seqs)
		n += len(seqs)
	})
	return n
}

// syncSegment syncs a commit (a var for the test that fails a sync after
// it reached the disk).
var syncSegment = (*recordlog.Segment).Sync

// commit runs batch's functions against the index under l.mu, then writes
// their frames in one write without holding l.mu, and returns the function
// that syncs them (fdatasync) and finishes the commit. With OverlapSyncs
// the next commit may be built and written while this one syncs; each
// finishes after the one before it (prev), so l.durable only grows and Next and Stats, which
// do not show a commit's records until it is finished, see the commits in
// order. A failed write or sync fails its calls and every commit after it
// that is in flight, and they are rolled back (Log.rollback): in the
// index and in the file, so that what their callers were told was not
// stored is never served, also after a restart.
func (l *Log) commit(batch []logWrite) (finish func() error) {
	c, err := l.build(batch)
	if c == nil {
		return func() error { return err }
	}
	if err == nil && len(c.buf) > 0 {
		// A segment removed while open takes writes that no restart
		// would find: checked before the write and after the sync.
		if err = store.CheckLinked(c.seg.File, c.seg.Path); err == nil {
			c.seg.Alloc, err = c.seg.Append(c.buf, c.base, l.opts.ZeroAhead)
		}
	}
	return func() error {
		if err == nil && len(c.buf) > 0 {
			if err = syncSegment(c.seg); err == nil {
				err = store.CheckLinked(c.seg.File, c.seg.Path)
			}
		}
		if c.prev != nil {
			<-c.prev
		}
		defer close(c.done)
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.finish(c, err)
	}
}

// build starts a commit and runs batch's functions in it. Once the
// commit is started (c is not nil) it must be finished, also after an
// error, so that the commits after it do not wait for it forever.
func (l *Log) build(batch []logWrite) (*logBatch, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.begin()
	if err != nil {
		return c, err
	}
	for _, fn := range batch {
		if err := c.run(fn); err != nil {
			return c, err
		}
	}
	if len(c.buf) > c.hdr {
		c.buf = recordlog.AppendCommit(c.buf, c.hdr)
	}
	c.seg.Size = c.base + int64(len(c.buf))
	return c, nil
}

// finish ends commit c after its sync, whose error is err. l.mu is held.
func (l *Log) finish(c *logBatch, err error) error {
	if cap(c.buf) <= 4<<20 {
		l.buf = c.buf[:0]
	}
	if err == nil && l.failed != nil {
		err = errors.New("queue: the record log's commit before this one failed")
	}
	if err != nil {
		if l.broken == nil && errors.Is(err, store.ErrRemoved) {
			// No write can be kept from now on; reads go on, so that
			// devices still drain what was acknowledged before.
			l.broken = err
		}
		if l.failed == nil {
			l.failed = c // the oldest commit not durable: rolled back from here
		}
		if c.gen == l.gen { // no commit after it in flight
			l.rollback()
		}
		return fmt.Errorf("queue: a commit of the record log failed, nothing of it is stored: %w", err)
	}
	l.durable = c.gen
	l.index.durable(c.gen)
	l.moved(c)
	if len(c.buf) > 0 {
		l.nCommits, l.nBytes = l.nCommits+1, l.nBytes+uint64(len(c.buf))
	}
	l.dropDead()
	l.checkpointSoon(c)
	return nil
}

// rollback undoes the commits from l.failed on, the last of which has
// finished: the index forgets their changes and the file their bytes. If
// the file cannot be rolled back, the Log refuses every later write (its
// reads go on) until it is opened again. l.mu is held.
func (l *Log) rollback() {
	c := l.failed
	l.failed = nil
	l.index.rollback()
	if l.broken != nil || c.seg == nil {
		return
	}
	last := l.segs[len(l.segs)-1]
	var err error
	switch {
	case c.hdr > 0 && last == c.seg: // it started this segment
		err = c.seg.Remove()
		l.segs = l.segs[:len(l.segs)-1]
	default:
		err = c.seg.Rollback(c.base, c.seg.Size, max(c.alloc, c.base))
	}
	if err != nil {
		l.broken = fmt.Errorf("queue: the record log could not take back a failed commit, and takes no writes until it is opened again: %w", err)
	}
}

// begin starts a commit, in a new segment when the current one is full.
// It returns the commit, once started, with any error. l.mu is held.
func (l *Log) begin() (*logBatch, error) {
	if l.broken != nil {
		return nil, l.broken
	}
	if l.failed != nil {
		return nil, errors.New("queue: a commit of the record log failed and is being taken back")
	}
	c := &logBatch{l: l, buf: l.buf[:0], gen: l.gen + 1, done: make(chan struct{}), prev: l.last}
	l.buf, l.gen, l.last, l.lastPrev, l.index.building = nil, c.gen, c.done, c.prev, c.gen
	seg := l.segs[len(l.segs)-1]
	seg.Extend(l.opts.ZeroAhead)                           // when it is Short: space may have come back
	if seg.Size < l.opts.SegmentSize && seg.Version == 2 { // a version 1 segment takes no commit frames
		c.seg, c.base, c.alloc = seg, seg.Size, seg.Alloc
		return c, nil
	}
	if c.prev != nil { // a torn write must stay in the last segment
		l.mu.Unlock()
		<-c.prev
		l.mu.Lock()
		c.prev = nil
		if l.broken != nil {
			return c, l.broken
		}
		if l.failed != nil { // the commit it waited for failed: it is taken back with this one
			return c, errors.New("queue: a commit of the record log failed and is being taken back")
		}
	}
	seg, err := l.rotate(c)
	if err != nil {
		return c, err
	}
	c.seg, c.base, c.hdr = seg, seg.Size, len(recordlog.Magic)
	return c, l.moveForward(c)
}

// run runs fn, turning a panic into an error (the index may then be half
// changed, so the caller stops the Log).
func (c *logBatch) run(fn func(*logBatch)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue: panic in a log write: %v", p)
		}
	}()
	fn(c)
	return nil
}
