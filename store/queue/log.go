package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/store/queue/internal/groupcommit"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// LogOptions configure OpenLog. The zero value is ready to use.
type LogOptions struct {
	// SegmentSize is the size at which the log starts a new segment file
	// (default 64 MiB). Only whole segments are deleted, so it is also
	// about how much disk acknowledged records may hold. At most 1 GiB:
	// a larger size is taken as 1 GiB.
	SegmentSize int64
	// ImportBolt, when set, names a bbolt queue file (OpenBolt's) to
	// import when the log directory does not exist yet: its records and
	// every agent's last seq move into the log, and the file is renamed
	// to ImportBolt + ".imported".
	ImportBolt string
	// MaxBatchSize caps the calls that share one commit (0: no cap).
	MaxBatchSize int
	// ZeroAhead is how far the log writes zeros ahead of its last frame
	// when a commit reaches the end of what was zeroed (default 1 MiB).
	// A commit that only overwrites zeros leaves the file's length alone,
	// so its fdatasync has no metadata to journal.
	ZeroAhead int64
	// OverlapSyncs lets the next commit be built and written while the
	// previous one syncs (two in flight). Off, a commit waits for the one
	// before it, and its batch gathers the calls of one whole commit; on
	// this project's development disk that was faster (docs/performance.md,
	// "Durable enqueue"). A disk that overlaps flushes may differ.
	OverlapSyncs bool
	// Now is the clock that names the copies of what opening cuts
	// (default time.Now).
	Now func() time.Time
}

func (o LogOptions) now() time.Time { return o.Now() }

const (
	defaultSegmentSize = 64 << 20
	defaultZeroAhead   = 1 << 20
)

// Log is the record-log Store: an append-only log of frames in segment
// files and its index in memory (see the package doc's "Record log"). It is
// safe for concurrent use.
//
// Log implements Store.
type Log struct {
	dir     string
	lock    *os.File
	opts    LogOptions
	commits *groupcommit.Group[logWrite]
	// enqueues are Enqueue's parts of commits, for reuse (logEnqueue).
	enqueues sync.Pool

	// life guards closed. Every call holds it for reading, so Close
	// waits for them.
	life   sync.RWMutex
	closed bool

	mu sync.RWMutex
	// mu guards the fields below. Next and Stats hold it for reading; a
	// commit holds it for writing while it checks and changes the index,
	// not while it writes and syncs.
	broken error // a failed commit that could not be rolled back: every later write fails
	// failed is the oldest commit that failed, until it and the commits
	// after it are rolled back (Log.finish).
	failed  *logBatch
	index                 // with segs, oldest first; the last one is appended to
	gen     uint64        // the last commit's number
	durable uint64        // the last commit whose write and sync succeeded
	last    chan struct{} // closed when commit gen is finished
	// lastPrev is closed when commit gen-1 is finished (OverlapSyncs).
	lastPrev chan struct{}
	buf      []byte
	// cuts are the torn tails OpenLog cut (TornTails).
	cuts []recordlog.Cut
	// What the commits wrote, for the benchmark.
	nCommits, nBytes uint64

	// The index checkpoint (logcheckpoint.go). ckMu guards ckGen (the
	// commit the last checkpoint written covers) and ckErr (the last
	// checkpoint's failure); ckWriters are the checkpoints being written.
	// ckIgnored says why OpenLog did not use the checkpoint; ckFresh is
	// set while the checkpoint OpenLog used still covers everything.
	ckMu      sync.Mutex
	ckGen     uint64
	ckErr     error
	ckWriters sync.WaitGroup
	ckIgnored error
	ckFresh   bool
	ckGone    bool // the checkpoint OpenLog used names deleted segments
}

var _ Store = (*Log)(nil)

// enter takes l.life for reading for one call; it fails after Close, or
// when ctx is done, and for a write (not for a read) once a failed commit
// could not be rolled back. The caller must call l.exit when it returns
// nil.
func (l *Log) enter(ctx context.Context, write bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.life.RLock()
	if l.closed {
		l.life.RUnlock()
		return ErrClosed
	}
	if !write {
		return nil
	}
	l.mu.RLock()
	err := l.broken
	l.mu.RUnlock()
	if err != nil {
		l.life.RUnlock()
		return err
	}
	return nil
}

func (l *Log) exit() { l.life.RUnlock() }

// Close implements Store. It waits for calls in progress.
func (l *Log) Close() error {
	l.life.Lock()
	defer l.life.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.ckWriters.Wait()
	if l.broken == nil && l.failed == nil && !(l.gen == 0 && l.ckFresh) {
		// A checkpoint that cannot be written (a full or read-only file
		// system) costs the next open time, not data: the older one, or
		// none, is used. It is not Close's error.
		l.closeCheckpoint()
	}
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.File.Close())
	}
	errs = append(errs, l.lock.Close())
	return errors.Join(errs...)
}

// Enqueue implements Store. The record is appended and synced (fdatasync)
// before it returns.
func (l *Log) Enqueue(ctx context.Context, r Record, b queuebounds.Bounds, now time.Time) (Record, error) {
	if err := l.enter(ctx, true); err != nil {
		return Record{}, err
	}
	defer l.exit()
	r, err := Prepare(r, b, now)
	if err != nil {
		return Record{}, err
	}
	if n := len(r.Body) + len(r.Agent) + len(r.From) + 64; n > recordlog.MaxFrameLen {
		return Record{}, fmt.Errorf("%w: a record of %d bytes, the log's frames hold %d", ErrTooLarge, n, recordlog.MaxFrameLen)
	}
	e := l.newEnqueue(r, b, now)
	err = l.commits.Do(e.run)
	r, refused, noSpace := e.r, e.refused, e.noSpace
	l.freeEnqueue(e)
	switch {
	case err != nil:
		return Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, err)
	case noSpace:
		return Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, ErrNoSpace)
	case refused != nil:
		return Record{}, refused
	}
	return r, nil
}

// logEnqueue is one Enqueue's part of its commit: the record, its bounds,
// and what the commit found (refused, noSpace). Log keeps them for reuse
// (Log.enqueues) with run bound once to write, so that an enqueue hands
// the group commit a function without allocating one.
type logEnqueue struct {
	l       *Log
	r       Record
	b       queuebounds.Bounds
	now     time.Time
	refused *FullError
	noSpace bool
	run     logWrite // e.write
}

func (l *Log) newEnqueue(r Record, b queuebounds.Bounds, now time.Time) *logEnqueue {
	e, ok := l.enqueues.Get().(*logEnqueue)
	if !ok {
		e = &logEnqueue{l: l}
		e.run = e.write
	}
	e.r, e.b, e.now = r, b, now
	return e
}

// freeEnqueue keeps e for the next Enqueue, holding nothing of this one's
// (its body): its commit has run it and is done with it.
func (l *Log) freeEnqueue(e *logEnqueue) {
	e.r, e.b, e.now, e.refused, e.noSpace = Record{}, queuebounds.Bounds{}, time.Time{}, nil, false
	l.enqueues.Put(e)
}

// write checks e's record against the log's room and its agent's bounds
// and appends it to the commit c, or records why not.
func (e *logEnqueue) write(c *logBatch) {
	l, r := e.l, &e.r
	c.purge(e.now)
	if e.noSpace = !c.roomFor(len(r.Body) + len(r.Agent) + len(r.From) + 64); e.noSpace {
		return
	}
	a := l.index.agents[r.Agent]
	var live counters
	var fromPeer peerCount
	if a != nil {
		live, fromPeer = a.c, l.index.peer(a, r.From)
	}
	if e.refused = check(live, fromPeer, *r, e.b); e.refused != nil {
		return
	}
	if a == nil {
		a = l.index.agent(r.Agent)
	}
	r.Seq = a.c.last + 1
	c.append(a, *r)
}

// Ack implements Store. The tombstone is synced when it returns.
func (l *Log) Ack(ctx context.Context, agent string, seqs []uint64) error {
	if err := l.enter(ctx, true); err != nil {
		return err
	}
	defer l.exit()
	if len(seqs) == 0 {
		return nil
	}
	err := l.commits.Do(func(c *logBatch) {
		a := l.index.agents[agent]
		if a == nil {
			return
		}
		c.tombstone(agent, l.index.remove(a, seqs))
	})
	if err != nil {
		return fmt.Errorf("queue: ack for %s: %w", agent, err)
	}
	return nil
}

// Purge implements Store.
func (l *Log) Purge(ctx context.Context, now time.Time) (int, error) {
	if err := l.enter(ctx, true); err != nil {
		return 0, err
	}
	defer l.exit()
	var n int
	err := l.commits.Do(func(c *logBatch) { n = c.purge(now) })
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	return n, nil
}

// visible reports whether e is a record Next and Stats show at now: its
// commit was synced and it is not expired.
func (l *Log) visible(e logEntry, now int64) bool {
	return !e.pending && e.expires >= now
}

// Next implements Store. It reads the records' frames from the segment
// files.
func (l *Log) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]Record, error) {
	if err := l.enter(ctx, false); err != nil {
		return nil, err
	}
	defer l.exit()
	l.mu.RLock()
	defer l.mu.RUnlock()
	a := l.index.agents[agent]
	if max <= 0 || after == ^uint64(0) || a == nil {
		return nil, nil
	}
	var out []Record
	i, _ := a.find(after + 1)
	for ns := now.UnixNano(); i < len(a.live) && len(out) < max; i++ {
		e := a.live[i]
		if !l.visible(e, ns) {
			continue
		}
		r, err := l.readRecord(e)
		if err != nil {
			return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// readRecord reads and decodes e's frame.
func (l *Log) readRecord(e logEntry) (Record, error) {
	b, err := l.index.seg(e.seg).ReadAt(int64(e.off), int(e.n))
	if err != nil {
		return Record{}, err
	}
	f, _, err := decodeFrame(b)
	if err == nil && (f.typ != frameRecord || f.rec.Seq != e.seq) {
		err = fmt.Errorf("frame at %d is not record %d", e.off, e.seq)
	}
	if err != nil {
		return Record{}, fmt.Errorf("%w: segment %d: %v", ErrCorrupt, e.seg, err)
	}
	return f.rec, nil
}

// Stats implements Store.
func (l *Log) Stats(ctx context.Context, agent string, now time.Time) (Stats, error) {
	if err := l.enter(ctx, false); err != nil {
		return Stats{}, err
	}
	defer l.exit()
	l.mu.RLock()
	defer l.mu.RUnlock()
	var st Stats
	a := l.index.agents[agent]
	if a == nil {
		return st, nil
	}
	for ns, i := now.UnixNano(), 0; i < len(a.live); i++ {
		e := a.live[i]
		if !l.visible(e, ns) {
			continue
		}
		st.Messages++
		st.Bytes += int64(e.size)
		if e.kind == KindHandshake {
			st.Handshakes++
			st.HandshakeBytes += int64(e.size)
		}
	}
	return st, nil
}

// closeCheckpoint writes the checkpoint of the index at Close; its
// failure is kept in l.ckErr.
func (l *Log) closeCheckpoint() {
	l.mu.Lock()
	data, err := l.encodeCheckpoint()
	l.mu.Unlock()
	if err != nil {
		l.ckMu.Lock()
		l.ckErr = fmt.Errorf("queue: the index checkpoint: %w", err)
		l.ckMu.Unlock()
		return
	}
	l.writeCheckpoint(data, l.gen)
}

// CheckpointIgnored returns why OpenLog read every segment instead of
// using the index checkpoint it found (damaged, or not matching the
// segments), or nil. The relay logs it; the library does not log.
func (l *Log) CheckpointIgnored() error { return l.ckIgnored }

// TornTails returns what OpenLog cut off the end of the last segment: the
// frames of a write that a crash cut short, whose callers were never told
// they were stored. The relay logs them; the library does not log.
func (l *Log) TornTails() []recordlog.Cut { return l.cuts }
