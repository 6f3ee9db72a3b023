package queue

import (
	"fmt"
	"math"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// logMove is a live record whose frame a commit copies forward, to the
// place the index points at once the commit is synced.
type logMove struct {
	a   *logAgent
	seq uint64
	off uint32
	n   uint32
}

// moveForward copies into c, which starts a new segment, the live records
// of the oldest segments that are mostly dead (recordlog.Compactable), so
// that those segments can be deleted. The copies are the same frames;
// replay takes a record frame for a seq that is live already as its new
// place. l.mu is held.
func (l *Log) moveForward(c *logBatch) error {
	from := recordlog.Compactable(l.segs)
	if len(from) == 0 {
		return nil
	}
	for _, a := range l.index.agents {
		for _, e := range a.live {
			seg := l.index.seg(e.seg)
			if !from[seg] {
				continue
			}
			b, err := seg.ReadAt(int64(e.off), int(e.n))
			if err != nil {
				return fmt.Errorf("queue: moving record %s/%d forward: %w", a.name, e.seq, err)
			}
			c.moves = append(c.moves, logMove{a: a, seq: e.seq, off: entryOffset(c.base + int64(len(c.buf))), n: e.n})
			c.buf = append(c.buf, b...)
		}
	}
	return nil
}

// moved points the index at the copies c wrote, once they are synced.
// A record acknowledged in the same commit is gone already. l.mu is held.
func (l *Log) moved(c *logBatch) {
	for _, m := range c.moves {
		i, found := m.a.find(m.seq)
		if !found {
			continue
		}
		e := &m.a.live[i]
		if s := l.index.seg(e.seg); s != &l.index.gone {
			if s.Live--; s.Live == 0 {
				s.DeadAt = c.gen
			}
		}
		e.seg, e.off, e.n = uint32(c.seg.ID), m.off, m.n
		c.seg.Live++
		c.seg.Records++
	}
}

// entryOffset returns off as a logEntry's offset. A segment ends soon
// after maxSegmentSize (OpenLog caps SegmentSize), so off fits unless a
// single commit wrote gigabytes: that commit fails (logBatch.run).
func entryOffset(off int64) uint32 {
	if off < 0 || off > math.MaxUint32 {
		panic(fmt.Sprintf("queue: frame offset %d does not fit the index", off))
	}
	return uint32(off)
}
