package queue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// The index checkpoint (the package doc's "Record log"): a copy of the
// index as the durable commits up to a position of the log made it, so
// that OpenLog decodes only the frames after that position. It is a
// cache: the segments are the truth. OpenLog still checks every frame's
// CRC and every commit, and ignores a checkpoint that is damaged or does
// not match the segments (Log.CheckpointIgnored says why).
//
//	magic       checkpointMagic
//	position    segment ID, offset (uvarint): where the covered commits end
//	tail        the (up to 16) bytes of the segment before the offset
//	segments    count; each: ID, record frames, live records (uvarint)
//	senders     count; each: name (uvarint length + bytes; "" for a free id)
//	agents      count; each: name, last seq, entry count, and per entry:
//	            seq, segment, offset, frame length, body length, sender
//	            (uvarint), kind (1 byte), expiry (Unix ns, int64 LE)
//	crc         CRC-32C of everything before it (uint32 LE)
const checkpointFile = "index.checkpoint"

var checkpointMagic = []byte("torpor queue index 1\n")

// checkpointTail is how many bytes before the position a checkpoint
// keeps, to tell a segment rewritten since (a repair, a restore) from the
// one it covered.
const checkpointTail = 16

// logPos is a position in the log: the end of a commit.
type logPos struct {
	seg uint64
	off int64
}

// encodeCheckpoint returns the checkpoint of the index at the end of the
// last segment. No commit may be in flight: l.mu is held and the last
// commit is durable.
func (l *Log) encodeCheckpoint() ([]byte, error) {
	last := l.segs[len(l.segs)-1]
	pos := logPos{seg: last.ID, off: last.Size}
	tail, err := last.ReadAt(max(pos.off-checkpointTail, 0), int(min(pos.off, checkpointTail)))
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), checkpointMagic...)
	b = binary.AppendUvarint(b, pos.seg)
	b = binary.AppendUvarint(b, uint64(pos.off))
	b = recordlog.AppendBytes(b, tail)
	b = binary.AppendUvarint(b, uint64(len(l.segs)))
	for _, s := range l.segs {
		b = binary.AppendUvarint(b, s.ID)
		b = binary.AppendUvarint(b, uint64(s.Records))
		b = binary.AppendUvarint(b, uint64(s.Live))
	}
	b = binary.AppendUvarint(b, uint64(len(l.index.senders.names)))
	for _, name := range l.index.senders.names {
		b = recordlog.AppendString(b, name)
	}
	b = binary.AppendUvarint(b, uint64(len(l.index.agents)))
	for _, a := range l.index.agents {
		b = appendCheckpointAgent(b, a)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, recordCRC)), nil
}

func appendCheckpointAgent(b []byte, a *logAgent) []byte {
	b = recordlog.AppendString(b, a.name)
	b = binary.AppendUvarint(b, a.c.last)
	b = binary.AppendUvarint(b, uint64(len(a.live)))
	for _, e := range a.live {
		b = binary.AppendUvarint(b, e.seq)
		b = binary.AppendUvarint(b, uint64(e.seg))
		b = binary.AppendUvarint(b, uint64(e.off))
		b = binary.AppendUvarint(b, uint64(e.n))
		b = binary.AppendUvarint(b, uint64(e.size))
		b = binary.AppendUvarint(b, uint64(e.from))
		b = append(b, byte(e.kind))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.expires))
	}
	return b
}

// writeCheckpoint writes data (encodeCheckpoint's) as the checkpoint of
// commit gen, unless a later one was written already.
func (l *Log) writeCheckpoint(data []byte, gen uint64) error {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	if gen < l.ckGen {
		return nil
	}
	err := atomicfile.WriteFile(filepath.Join(l.dir, checkpointFile), data, 0o600)
	if err != nil {
		err = fmt.Errorf("queue: writing the index checkpoint: %w", err)
	} else {
		l.ckGen = gen
	}
	l.ckErr = err
	return err
}

// checkpointSoon writes the checkpoint of the index in the background
// after commit c, which started a segment, when no commit follows it in
// flight. l.mu is held.
func (l *Log) checkpointSoon(c *logBatch) {
	if c.hdr == 0 || c.gen != l.gen {
		return
	}
	data, err := l.encodeCheckpoint()
	if err != nil {
		l.ckMu.Lock()
		l.ckErr = err
		l.ckMu.Unlock()
		return
	}
	l.ckWriters.Add(1)
	go func() {
		defer l.ckWriters.Done()
		l.writeCheckpoint(data, c.gen)
	}()
}

// checkpoint is a decoded checkpoint file.
type checkpoint struct {
	pos     logPos
	tail    []byte
	segs    []checkpointSeg
	senders []string
	agents  []checkpointAgent
}

type checkpointSeg struct {
	id            uint64
	records, live int
}

type checkpointAgent struct {
	name string
	last uint64
	live []logEntry
}

// readCheckpoint reads dir's checkpoint: nil, nil when there is none.
func readCheckpoint(dir string) (*checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < len(checkpointMagic)+4 || !bytes.HasPrefix(b, checkpointMagic) {
		return nil, errors.New("not an index checkpoint")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, recordCRC) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("its CRC does not match: damaged")
	}
	d := recordlog.NewFields(body[len(checkpointMagic):])
	ck := &checkpoint{pos: logPos{seg: d.Uvarint(), off: int64(d.Uvarint())}, tail: d.Bytes()}
	for n := d.Uvarint(); n > 0 && d.Err() == nil; n-- {
		ck.segs = append(ck.segs, checkpointSeg{id: d.Uvarint(), records: int(d.Uvarint()), live: int(d.Uvarint())})
	}
	for n := d.Uvarint(); n > 0 && d.Err() == nil; n-- {
		ck.senders = append(ck.senders, d.String())
	}
	for n := d.Uvarint(); n > 0 && d.Err() == nil; n-- {
		ck.agents = append(ck.agents, readCheckpointAgent(d))
	}
	if d.Err() == nil && d.Left() != 0 {
		d.Fail("%d bytes after the agents", d.Left())
	}
	return ck, d.Err()
}

func readCheckpointAgent(d *recordlog.Fields) checkpointAgent {
	a := checkpointAgent{name: d.String(), last: d.Uvarint()}
	n := d.Uvarint()
	if n > uint64(d.Left()) {
		d.Fail("%d entries", n)
		return a
	}
	a.live = make([]logEntry, 0, n)
	for ; n > 0 && d.Err() == nil; n-- {
		e := logEntry{seq: d.Uvarint()}
		seg, off, fn, size, from := d.Uvarint(), d.Uvarint(), d.Uvarint(), d.Uvarint(), d.Uvarint()
		if seg > math.MaxUint32 || off > math.MaxUint32 || fn > math.MaxUint32 || size > math.MaxUint32 || from > math.MaxUint32 {
			d.Fail("entry %d out of range", e.seq)
		}
		e.seg, e.off, e.n, e.size, e.from = uint32(seg), uint32(off), uint32(fn), uint32(size), uint32(from)
		e.kind, e.expires = Kind(d.Byte()), d.Fixed64()
		a.live = append(a.live, e)
	}
	return a
}

// staleCheckpoint is why OpenLog did not use a checkpoint: it does not
// match the segments, which it then reads whole.
type staleCheckpoint struct{ why string }

func (e *staleCheckpoint) Error() string {
	return "queue: ignored the record log's index checkpoint (the segments are read instead): " + e.why
}

func stale(format string, args ...any) error {
	return &staleCheckpoint{why: fmt.Sprintf(format, args...)}
}

// install puts ck's index into l, whose segments are open and not read
// yet, after checking that ck matches them.
func (l *Log) install(ck *checkpoint) error {
	var covered []*recordlog.Segment
	for _, s := range l.segs {
		if s.ID <= ck.pos.seg {
			covered = append(covered, s)
		}
	}
	// The oldest segments ck covers may have been deleted since: a later
	// commit emptied them, and replaying it takes their records out.
	gone := len(ck.segs) - len(covered)
	if gone < 0 || len(covered) == 0 || covered[len(covered)-1].ID != ck.pos.seg {
		return stale("it covers %d segments up to %d, the log has %d up to there", len(ck.segs), ck.pos.seg, len(covered))
	}
	for i, s := range covered {
		if s.ID != ck.segs[gone+i].id {
			return stale("it covers segment %d, the log has %d", ck.segs[gone+i].id, s.ID)
		}
		s.Records = ck.segs[gone+i].records
	}
	l.ckGone = gone > 0
	last := covered[len(covered)-1]
	tail, err := last.ReadAt(ck.pos.off-int64(len(ck.tail)), len(ck.tail))
	if err != nil || !bytes.Equal(tail, ck.tail) {
		return stale("segment %d does not end its covered commits at offset %d as it did", ck.pos.seg, ck.pos.off)
	}
	if err := l.installSenders(ck.senders); err != nil {
		return err
	}
	for _, ca := range ck.agents {
		if err := l.installAgent(ck, ca); err != nil {
			return err
		}
	}
	for i, s := range covered {
		if s.Live != ck.segs[gone+i].live {
			return stale("segment %d: %d live records, its entries say %d", s.ID, ck.segs[gone+i].live, s.Live)
		}
	}
	return nil
}

// checkGone returns an error when, after the frames after the checkpoint
// were replayed, a live record is still in a segment that was deleted.
func (l *Log) checkGone() error {
	if !l.ckGone {
		return nil
	}
	for _, a := range l.index.agents {
		for _, e := range a.live {
			if l.index.seg(e.seg) == &l.index.gone {
				return stale("record %s/%d is in segment %d, deleted since", a.name, e.seq, e.seg)
			}
		}
	}
	return nil
}

// installSenders makes names the sender table.
func (l *Log) installSenders(names []string) error {
	if len(names) == 0 || names[0] != "" {
		return stale("no sender table")
	}
	t := newSenderTable()
	t.names, t.refs = names, make([]int, len(names))
	for id, name := range names[1:] {
		if name == "" {
			t.free = append(t.free, uint32(id+1))
		} else if _, dup := t.ids[name]; dup {
			return stale("sender %q twice", name)
		} else {
			t.ids[name] = uint32(id + 1)
			t.zero = append(t.zero, uint32(id+1)) // forgotten unless an entry names it
		}
	}
	l.index.senders = t
	return nil
}

// installAgent puts one agent of ck into the index.
func (l *Log) installAgent(ck *checkpoint, ca checkpointAgent) error {
	if ca.name == "" || l.index.agents[ca.name] != nil {
		return stale("agent %q", ca.name)
	}
	a := l.index.agent(ca.name)
	a.c.last = ca.last
	minExp := int64(math.MaxInt64)
	for i, e := range ca.live {
		switch s := l.index.seg(e.seg); {
		case e.seq == 0 || e.seq > ca.last || i > 0 && e.seq <= ca.live[i-1].seq:
			return stale("agent %s: entry %d has seq %d", ca.name, i, e.seq)
		case e.kind > KindHandshake || int(e.from) >= len(ck.senders) || e.from != 0 && ck.senders[e.from] == "":
			return stale("agent %s: record %d is malformed", ca.name, e.seq)
		case !slices.ContainsFunc(ck.segs, func(c checkpointSeg) bool { return c.id == uint64(e.seg) }) ||
			uint64(e.seg) == ck.pos.seg && int64(e.off)+int64(e.n) > ck.pos.off:
			return stale("agent %s: record %d is not in the covered segments", ca.name, e.seq)
		default:
			l.index.count(a, e, +1)
			s.Live++
			minExp = min(minExp, e.expires)
		}
	}
	a.live = ca.live
	if len(a.live) > 0 {
		l.index.noteExpiry(a, minExp)
	}
	return nil
}

// coveredFrame reports whether the frame at off of segment id is one the
// checkpoint at pos holds.
func coveredFrame(pos logPos, id uint64, off int64) bool {
	return id < pos.seg || id == pos.seg && off < pos.off
}
