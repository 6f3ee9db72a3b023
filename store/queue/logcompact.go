package queue

import "fmt"

// logMove is a live record whose frame a commit copies forward, to the
// place the index points at once the commit is synced.
type logMove struct {
	a   *logAgent
	seq uint64
	off int64
	n   int
}

// moveForward copies into c, which starts a new segment, the live records
// of the oldest segments that are mostly dead (at most a quarter of the
// records written to them still live), so that those segments can be
// deleted: only a prefix of the segments is ever deleted (see dropDead), and
// one record that nobody drains would otherwise keep every later segment.
// The copies are the same frames; replay takes a record frame for a seq
// that is live already as its new place. l.mu is held.
func (l *Log) moveForward(c *logBatch) error {
	from := map[*segment]bool{}
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.live*4 > s.records {
			break
		}
		from[s] = true
	}
	if len(from) == 0 {
		return nil
	}
	for _, a := range l.index.agents {
		for _, e := range a.live {
			if !from[e.seg] {
				continue
			}
			start := len(c.buf)
			c.buf = append(c.buf, make([]byte, e.n)...)
			if _, err := e.seg.f.ReadAt(c.buf[start:], e.off); err != nil {
				return fmt.Errorf("queue: moving record %s/%d forward: %w", a.name, e.seq, err)
			}
			c.moves = append(c.moves, logMove{a: a, seq: e.seq, off: c.base + int64(start), n: e.n})
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
		if e.seg.live--; e.seg.live == 0 {
			e.seg.deadAt = c.gen
		}
		e.seg, e.off, e.n = c.seg, m.off, m.n
		c.seg.live++
		c.seg.records++
	}
}
