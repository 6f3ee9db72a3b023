package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

var bgc = context.Background()

func openLog(t testing.TB, dir string, o *LogOptions) *Log {
	t.Helper()
	l, err := OpenLog(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// lastSegment returns the path of dir's newest segment file.
func lastSegment(t testing.TB, dir string) string {
	t.Helper()
	ids, err := recordlog.List(dir)
	if err != nil || len(ids) == 0 {
		t.Fatalf("segments of %s: %v, %v", dir, ids, err)
	}
	return filepath.Join(dir, recordlog.Name(ids[len(ids)-1]))
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// copyDir copies the segment files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func liveSeqs(t testing.TB, s Store, agent string, now time.Time) []uint64 {
	t.Helper()
	rs, err := s.Next(bgc, agent, 0, 1<<20, now)
	if err != nil {
		t.Fatal(err)
	}
	return seqs(rs)
}

// TestLogTornTail cuts the last commit at every byte: the log opens with
// every record committed before it, reports the cut and keeps a copy of
// what it cut, and the next enqueue is appended after what survived. A
// byte flipped inside that commit, which was acknowledged, is damage: the
// log refuses to open, names the file and the offset, and changes
// nothing. Garbage in the zeros after the last commit that a crash can
// leave (a frame cut short) is cut and loses nothing.
func TestLogTornTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{ZeroAhead: 2000}
	l := openLog(t, dir, o)
	b := queuebounds.Default()
	for i := range 5 {
		mustEnqueue(t, l, msg(alice, fmt.Sprint("record ", i)), b, t0)
	}
	if err := l.Ack(bgc, agent, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	before := l.segs[len(l.segs)-1].Size
	mustEnqueue(t, l, msg(bob, "the last one"), b, t0) // seq 6
	full := l.segs[len(l.segs)-1].Size
	l.Close()
	if alloc := fileSize(t, lastSegment(t, dir)); alloc < full+100 {
		t.Fatalf("segment of %d bytes, frames end at %d: no zeros ahead", alloc, full)
	}
	for cut := before; cut <= full; cut++ {
		want := []uint64{1, 3, 4, 5}
		if cut == full {
			want = append(want, 6)
		}
		checkTorn(t, dir, o, want, func(path string) error { return os.Truncate(path, cut) })
		if cut < full {
			checkDamage(t, dir, o, cut)
		}
	}
	for _, off := range []int64{full + 1, full + 4, full + 99} {
		checkTorn(t, dir, o, []uint64{1, 3, 4, 5, 6}, func(path string) error { return flipByte(path, off) })
	}
}

// checkDamage flips the byte at off of the last segment of a copy of dir
// and checks that opening it is refused with a *recordlog.DamageError
// naming the file (which is a *store.CorruptError too), and that the file
// is unchanged.
func checkDamage(t *testing.T, dir string, o *LogOptions, off int64) {
	t.Helper()
	cp := copyDir(t, dir)
	path := lastSegment(t, cp)
	if err := flipByte(path, off); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	l, err := OpenLog(cp, o)
	var de *recordlog.DamageError
	if !errors.As(err, &de) || de.Path != path || !errors.As(err, new(*store.CorruptError)) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("open after a flip at %d = %v, want a DamageError naming %s", off, err, path)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("a refused open changed the damaged file (flip at %d)", off)
	}
}

// checkTorn damages the last segment of a copy of dir with damage and
// checks that the log opened over it holds want and appends after it.
func checkTorn(t *testing.T, dir string, o *LogOptions, want []uint64, damage func(string) error) {
	t.Helper()
	cp := copyDir(t, dir)
	if err := damage(lastSegment(t, cp)); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(cp, o)
	if err != nil {
		t.Fatalf("open after damage: %v", err)
	}
	defer l.Close()
	if diff := cmp.Diff(want, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Fatalf("records after damage (-want +got):\n%s", diff)
	}
	r := mustEnqueue(t, l, msg(bob, "after"), queuebounds.Default(), t0)
	if r.Seq != want[len(want)-1]+1 {
		t.Errorf("seq after damage = %d, want %d", r.Seq, want[len(want)-1]+1)
	}
	l.Close()
	l2 := openLog(t, cp, o)
	defer l2.Close()
	if diff := cmp.Diff(append(want, r.Seq), liveSeqs(t, l2, agent, t0)); diff != "" {
		t.Errorf("records after damage, an enqueue and a reopen (-want +got):\n%s", diff)
	}
}

func flipByte(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= 0x40
	_, err = f.WriteAt(b, off)
	return err
}

// TestLogCorruptionBeforeTheTail: a damaged frame, or bytes other than
// zeros after the frames, in a segment other than the last is refused
// with *store.CorruptError, and nothing is cut.
func TestLogCorruptionBeforeTheTail(t *testing.T) {
	src := filepath.Join(t.TempDir(), "log")
	l := openLog(t, src, &LogOptions{SegmentSize: 200, ZeroAhead: 100})
	for i := range 10 {
		mustEnqueue(t, l, msg(alice, fmt.Sprint("record ", i)), queuebounds.Default(), t0)
	}
	frameEnd := l.segs[0].Size
	l.Close()
	for _, off := range []int64{int64(len(recordlog.Magic)) + 12, frameEnd + 5} {
		dir := copyDir(t, src)
		ids, _ := recordlog.List(dir)
		if len(ids) < 3 {
			t.Fatalf("%d segments, want several", len(ids))
		}
		first := filepath.Join(dir, recordlog.Name(ids[0]))
		size := fileSize(t, first)
		if err := flipByte(first, off); err != nil {
			t.Fatal(err)
		}
		_, err := OpenLog(dir, nil)
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.Path != first {
			t.Fatalf("OpenLog over a first segment damaged at %d = %v, want *store.CorruptError naming %s", off, err, first)
		}
		if got := fileSize(t, first); got != size {
			t.Errorf("damaged segment is %d bytes after the refused open, was %d", got, size)
		}
	}
}

// TestLogNewSegmentLostInACrash: a power cut between a rotation's
// creation of the next segment and the sync of its first commit can leave
// that segment empty, cut inside its header, or all zeros (a file system
// that made the new length durable but not the data). No commit in it was
// acknowledged, so the log opens with what the earlier segments hold and
// appends after it; a last segment whose header holds anything else is
// still refused as corrupt.
func TestLogNewSegmentLostInACrash(t *testing.T) {
	src := filepath.Join(t.TempDir(), "log")
	l := openLog(t, src, nil)
	for i := range 3 {
		mustEnqueue(t, l, msg(alice, fmt.Sprint("record ", i)), queuebounds.Default(), t0)
	}
	l.Close()
	for name, content := range map[string][]byte{
		"empty":          nil,
		"half a header":  recordlog.Magic[:3],
		"all zeros":      make([]byte, 4096),
		"header, zeros":  append(append([]byte{}, recordlog.Magic...), make([]byte, 512)...),
		"part and zeros": append(append([]byte{}, recordlog.Magic[:5]...), make([]byte, 512)...),
	} {
		dir := copyDir(t, src)
		if err := os.WriteFile(filepath.Join(dir, recordlog.Name(2)), content, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, nil)
		if err != nil {
			t.Fatalf("%s: OpenLog = %v, want the log of the first segment", name, err)
		}
		if diff := cmp.Diff([]uint64{1, 2, 3}, liveSeqs(t, l, agent, t0)); diff != "" {
			t.Errorf("%s: records (-want +got):\n%s", name, diff)
		}
		if r := mustEnqueue(t, l, msg(bob, "after"), queuebounds.Default(), t0); r.Seq != 4 {
			t.Errorf("%s: seq after the lost segment = %d, want 4", name, r.Seq)
		}
		l.Close()
		l = openLog(t, dir, nil)
		if diff := cmp.Diff([]uint64{1, 2, 3, 4}, liveSeqs(t, l, agent, t0)); diff != "" {
			t.Errorf("%s: records after a reopen (-want +got):\n%s", name, diff)
		}
		l.Close()
	}
	dir := copyDir(t, src)
	bad := append([]byte("TPQXXX"), make([]byte, 100)...)
	if err := os.WriteFile(filepath.Join(dir, recordlog.Name(2)), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *store.CorruptError
	if _, err := OpenLog(dir, nil); !errors.As(err, &ce) {
		t.Errorf("OpenLog over a last segment with a damaged header = %v, want *store.CorruptError", err)
	}
}

// TestLogSeqsOutliveDeletedSegments: once every record is acknowledged
// the segments that held them are deleted, and seqs still continue after
// the last one, also after a reopen.
func TestLogSeqsOutliveDeletedSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{SegmentSize: 300}
	l := openLog(t, dir, o)
	for i := range 20 {
		mustEnqueue(t, l, msg(alice, fmt.Sprint("record ", i)), queuebounds.Default(), t0)
	}
	if err := l.Ack(bgc, agent, liveSeqs(t, l, agent, t0)); err != nil {
		t.Fatal(err)
	}
	for range 3 { // rotate past the segments that held them
		mustEnqueue(t, l, Record{Agent: "did:key:other", Body: make([]byte, 300)}, queuebounds.Default(), t0)
	}
	ids, _ := recordlog.List(dir)
	if ids[0] == 1 || len(ids) > 3 {
		t.Errorf("segments after everything was acknowledged = %v, want the old ones deleted", ids)
	}
	l.Close()
	l = openLog(t, dir, o)
	defer l.Close()
	if r := mustEnqueue(t, l, msg(alice, "new"), queuebounds.Default(), t0); r.Seq != 21 {
		t.Errorf("seq after the segments were deleted and a reopen = %d, want 21", r.Seq)
	}
}

// TestLogWriteFailure: a failed write fails its caller; a log whose
// failed commit cannot be taken back (its file is gone) refuses later
// writes but still serves reads, and a log opened again holds everything
// committed.
func TestLogWriteFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openLog(t, dir, nil)
	mustEnqueue(t, l, msg(alice, "kept"), queuebounds.Default(), t0)
	l.segs[len(l.segs)-1].File.Close() // the next write fails, and so does its rollback
	if _, err := l.Enqueue(bgc, msg(alice, "lost"), queuebounds.Default(), t0); err == nil {
		t.Fatal("Enqueue with a failing write succeeded")
	}
	if st, err := l.Stats(bgc, agent, t0); err != nil || st.Messages != 1 {
		t.Errorf("Stats after a failed write = %+v, %v; want the one record", st, err)
	}
	if _, err := l.Enqueue(bgc, msg(alice, "later"), queuebounds.Default(), t0); err == nil {
		t.Error("Enqueue after a failed rollback succeeded")
	}
	l.Close()
	l = openLog(t, dir, nil)
	defer l.Close()
	if diff := cmp.Diff([]uint64{1}, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Errorf("records after reopen (-want +got):\n%s", diff)
	}
}

// TestLogFailedCommitIsNotStored: a commit whose sync fails after its
// bytes reached the disk (the sender is answered queued: false) is taken
// back: not served, not counted, its seq used again, and not there after
// a restart either. The log goes on taking records.
func TestLogFailedCommitIsNotStored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openLog(t, dir, nil)
	b := queuebounds.Default()
	mustEnqueue(t, l, msg(alice, "kept"), b, t0)
	mustEnqueue(t, l, msg(alice, "acked"), b, t0)
	fail := errors.New("injected sync failure")
	syncSegment = func(s *recordlog.Segment) error {
		if err := s.Sync(); err != nil {
			return err
		}
		return fail
	}
	_, err := l.Enqueue(bgc, msg(alice, "not stored"), b, t0)
	errAck := l.Ack(bgc, agent, []uint64{2})
	syncSegment = (*recordlog.Segment).Sync
	if !errors.Is(err, fail) || !errors.Is(errAck, fail) {
		t.Fatalf("Enqueue, Ack with a failing sync = %v, %v; want the sync's error", err, errAck)
	}
	if diff := cmp.Diff([]uint64{1, 2}, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Errorf("records after the failed commits (-want +got):\n%s", diff)
	}
	if r := mustEnqueue(t, l, msg(alice, "next"), b, t0); r.Seq != 3 {
		t.Errorf("seq after a failed commit = %d, want 3", r.Seq)
	}
	checkLogIndex(t, l)
	l.Close()
	l = openLog(t, dir, nil)
	defer l.Close()
	rs, err := l.Next(bgc, agent, 0, 10, t0)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, r := range rs {
		bodies = append(bodies, string(r.Body))
	}
	if diff := cmp.Diff([]string{"kept", "acked", "next"}, bodies); diff != "" {
		t.Errorf("records after a restart (-want +got):\n%s", diff)
	}
}

// TestLogImportsBolt: a log opened with ImportBolt over a bbolt queue
// holds its live records and continues its seqs; the file is renamed and
// the import does not run twice. A bbolt file beside a log not imported
// from it is refused.
func TestLogImportsBolt(t *testing.T) {
	src, path := mustOpen(t)
	b := queuebounds.Default()
	var want []Record
	for i := range 6 {
		want = append(want, mustEnqueue(t, src, msg(alice, fmt.Sprint("r", i)), b, t0))
	}
	if err := src.Ack(bgc, agent, []uint64{1, 6}); err != nil {
		t.Fatal(err)
	}
	want = want[1:5]
	src.Close()
	dir := filepath.Join(filepath.Dir(path), "queue.log")
	for range 2 {
		l := openLog(t, dir, &LogOptions{ImportBolt: path})
		rs, err := l.Next(bgc, agent, 0, 100, t0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rs); diff != "" {
			t.Errorf("imported records (-want +got):\n%s", diff)
		}
		l.Close()
	}
	if _, err := os.Stat(path + ".imported"); err != nil {
		t.Errorf("the bbolt file was not renamed: %v", err)
	}
	l := openLog(t, dir, &LogOptions{ImportBolt: path})
	r := mustEnqueue(t, l, msg(alice, "next"), b, t0)
	l.Close()
	if r.Seq != 7 {
		t.Errorf("seq after import = %d, want 7", r.Seq)
	}
	other, otherPath := mustOpen(t)
	other.Close()
	if _, err := OpenLog(dir, &LogOptions{ImportBolt: otherPath}); err == nil {
		t.Error("OpenLog beside a bbolt queue it was not imported from succeeded")
	}
}

// TestLogMatchesBolt runs the same random calls against Bolt and Log
// (reopening the log now and then, with small segments) and compares
// every answer.
func TestLogMatchesBolt(t *testing.T) {
	bs, _ := mustOpen(t)
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{SegmentSize: 2048, ZeroAhead: 256}
	l := openLog(t, dir, o)
	defer func() { l.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes, b.TTL = 12, 5, 600, 300, time.Minute
	b.HandshakeMessages, b.HandshakeBytes = 2, 100
	now, seen := t0, map[string]bool{}
	for i := range 3000 {
		if i%400 == 399 {
			l.Close()
			l = openLog(t, dir, o)
		}
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		c := randomCall(rng, b, now)
		if want, got := c.run(bs), c.run(l); want != got {
			t.Fatalf("call %d %+v:\nbolt: %s\nlog:  %s", i, c, want, got)
		} else if c.op == "enqueue" && strings.Contains(got, "full") {
			seen[got[2:]] = true
		}
	}
	checkLogIndex(t, l)
	if len(seen) != 3 {
		t.Errorf("refusals seen: %v, want each bound's", seen)
	}
}

// testCall is one random call of TestLogMatchesBolt.
type testCall struct {
	op    string
	agent string
	r     Record
	seqs  []uint64
	b     queuebounds.Bounds
	now   time.Time
}

func randomCall(rng *rand.Rand, b queuebounds.Bounds, now time.Time) testCall {
	agents, peers := []string{agent, "did:key:a2"}, []string{alice, bob, ""}
	c := testCall{agent: agents[rng.IntN(2)], b: b, now: now}
	switch n := rng.IntN(20); {
	case n < 10:
		c.op = "enqueue"
		c.r = Record{Agent: c.agent, From: peers[rng.IntN(3)], Kind: Kind(rng.IntN(4) / 3), Body: make([]byte, rng.IntN(120))}
	case n < 14:
		c.op = "ack"
		for range rng.IntN(4) {
			c.seqs = append(c.seqs, uint64(rng.IntN(200)))
		}
	case n < 17:
		c.op = "next"
		c.seqs = []uint64{uint64(rng.IntN(200)), uint64(rng.IntN(8))}
	case n < 19:
		c.op = "stats"
	default:
		c.op = "purge"
	}
	return c
}

// run makes the call on s and returns its answer as text.
func (c testCall) run(s Store) string {
	switch c.op {
	case "enqueue":
		r, err := s.Enqueue(bgc, c.r, c.b, c.now)
		return fmt.Sprint(r.Seq, " ", err)
	case "ack":
		return fmt.Sprint(s.Ack(bgc, c.agent, c.seqs))
	case "next":
		rs, err := s.Next(bgc, c.agent, c.seqs[0], int(c.seqs[1]), c.now)
		return fmt.Sprint(rs, err)
	case "stats":
		st, err := s.Stats(bgc, c.agent, c.now)
		return fmt.Sprint(st, err)
	}
	n, err := s.Purge(bgc, c.now)
	return fmt.Sprint(n, err)
}

// checkLogIndex recomputes the counters, peer counts and segment counts
// of l's index from its entries.
func checkLogIndex(t *testing.T, l *Log) {
	t.Helper()
	segLive := map[uint64]int{}
	for name, a := range l.index.agents {
		want := counters{last: a.c.last}
		peers := map[uint32]peerCount{}
		for i, e := range a.live {
			if i > 0 && a.live[i-1].seq >= e.seq || e.seq > a.c.last {
				t.Errorf("%s: entry %d has seq %d after %d, last %d", name, i, e.seq, a.live[max(i-1, 0)].seq, a.c.last)
			}
			want.add(Record{Kind: e.kind, Body: make([]byte, e.size)}, +1)
			if e.from != 0 {
				if l.index.senders.refs[e.from] <= 0 || l.index.senders.ids[l.index.senders.names[e.from]] != e.from {
					t.Errorf("%s: entry %d names sender %d, which the table does not hold", name, i, e.from)
				}
				peers[e.from] = peerCount{n: peers[e.from].n + 1, bytes: peers[e.from].bytes + uint64(e.size)}
			}
			segLive[uint64(e.seg)]++
		}
		if a.c != want || fmt.Sprint(a.peers) != fmt.Sprint(peers) {
			t.Errorf("%s: counters %+v peers %v; entries say %+v, %v", name, a.c, a.peers, want, peers)
		}
	}
	named := map[uint32]bool{}
	for _, a := range l.index.agents {
		for _, e := range a.live {
			named[e.from] = e.from != 0
		}
	}
	delete(named, 0)
	if len(l.index.journal) == 0 && len(l.index.senders.ids) != len(named) {
		t.Errorf("the sender table holds %d senders, the live records name %d", len(l.index.senders.ids), len(named))
	}
	for _, s := range l.segs {
		if s.Live != segLive[s.ID] {
			t.Errorf("segment %d counts %d live records, the index %d", s.ID, s.Live, segLive[s.ID])
		}
	}
	if !slices.IsSortedFunc(l.segs, func(a, b *recordlog.Segment) int { return int(a.ID) - int(b.ID) }) {
		t.Error("segments out of order")
	}
}

// TestLogMovesLiveRecordsForward: a record nobody drains does not keep
// the segments written after it: when a segment is mostly dead its live
// records are copied forward and it is deleted. The record reads the same
// before and after a reopen.
func TestLogMovesLiveRecordsForward(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{SegmentSize: 1024, ZeroAhead: 64}
	l := openLog(t, dir, o)
	keep := mustEnqueue(t, l, Record{Agent: "did:key:asleep", From: alice, Body: []byte("kept for days")}, queuebounds.Default(), t0)
	for i := range 200 {
		r := mustEnqueue(t, l, msg(bob, fmt.Sprint("drained ", i)), queuebounds.Default(), t0)
		if err := l.Ack(bgc, agent, []uint64{r.Seq}); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _ := recordlog.List(dir); len(ids) > 3 || ids[len(ids)-1] < 10 {
		t.Errorf("segments %v: want the log rotated many times and at most 3 left", ids)
	}
	checkLogIndex(t, l)
	for range 2 {
		rs, err := l.Next(bgc, "did:key:asleep", 0, 10, t0)
		if err != nil || len(rs) != 1 {
			t.Fatalf("Next for the undrained agent = %v, %v", rs, err)
		}
		if diff := cmp.Diff(keep, rs[0]); diff != "" {
			t.Errorf("the record moved forward (-want +got):\n%s", diff)
		}
		l.Close()
		l = openLog(t, dir, o)
	}
	l.Close()
}

// TestLogConcurrentDrain: senders enqueue while a drainer reads and
// acknowledges, with segments small enough to rotate, move records and
// delete segments under the reads; the drainer gets every record once,
// with its body.
func TestLogConcurrentDrain(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		t.Run(fmt.Sprint("overlap=", overlap), func(t *testing.T) {
			concurrentDrain(t, &LogOptions{SegmentSize: 4096, ZeroAhead: 512, OverlapSyncs: overlap})
		})
	}
}

func concurrentDrain(t *testing.T, o *LogOptions) {
	l := openLog(t, filepath.Join(t.TempDir(), "log"), o)
	defer l.Close()
	const senders, each = 8, 50
	b := queuebounds.Default()
	b.MaxPerPeer, b.MaxMessages = senders*each, senders*each
	done := make(chan error, senders)
	for i := range senders {
		go func() {
			for j := range each {
				body := fmt.Sprintf("%d/%d", i, j)
				if _, err := l.Enqueue(bgc, msg(alice, body), b, t0); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	got, finished := map[string]bool{}, 0
	for finished < senders || len(got) < senders*each {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		default:
		}
		rs, err := l.Next(bgc, agent, 0, 7, t0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if got[string(r.Body)] {
				t.Fatalf("record %d (%s) drained twice", r.Seq, r.Body)
			}
			got[string(r.Body)] = true
		}
		if err := l.Ack(bgc, agent, seqs(rs)); err != nil {
			t.Fatal(err)
		}
	}
	checkLogIndex(t, l)
}

// TestLogLocksItsDirectory: a second OpenLog of a directory in use fails,
// and succeeds once the first is closed.
func TestLogLocksItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openLog(t, dir, nil)
	if l2, err := OpenLog(dir, nil); err == nil {
		l2.Close()
		if runtime.GOOS == "linux" {
			t.Error("a second OpenLog of a directory in use succeeded")
		}
	}
	l.Close()
	openLog(t, dir, nil).Close()
}

// TestLogFailedCommitRecovers: a commit that fails before its write (a
// panic in a call, a segment that cannot be created) fails its callers
// and is taken back; later calls do not wait for it, fail while the cause
// lasts, and succeed once it is gone.
func TestLogFailedCommitRecovers(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "log"), nil)
	if err := l.commits.Do(func(c *logBatch) { c.tombstone(agent, []uint64{1}); panic("boom") }); err == nil {
		t.Error("a panicking commit succeeded")
	}
	if r, err := l.Enqueue(bgc, msg(alice, "after"), queuebounds.Default(), t0); err != nil || r.Seq != 1 {
		t.Errorf("Enqueue after a failed commit = %d, %v; want seq 1", r.Seq, err)
	}
	l.Close()

	dir := filepath.Join(t.TempDir(), "log")
	l = openLog(t, dir, &LogOptions{SegmentSize: 100, ZeroAhead: 64})
	defer l.Close()
	blocker := filepath.Join(dir, recordlog.Name(2))
	if err := os.Mkdir(blocker, 0o700); err != nil { // segment 2 cannot be created
		t.Fatal(err)
	}
	var err error
	n := 0
	for ; err == nil && n < 10; n++ {
		_, err = l.Enqueue(bgc, msg(alice, "fills segment 1"), queuebounds.Default(), t0)
	}
	if err == nil {
		t.Fatal("no enqueue failed, yet segment 2 cannot be created")
	}
	if _, err := l.Enqueue(bgc, msg(alice, "after"), queuebounds.Default(), t0); err == nil {
		t.Error("Enqueue while segment 2 cannot be created succeeded")
	}
	os.Remove(blocker)
	if r, err := l.Enqueue(bgc, msg(alice, "after"), queuebounds.Default(), t0); err != nil || r.Seq != uint64(n) {
		t.Errorf("Enqueue once segment 2 can be created = %d, %v; want seq %d", r.Seq, err, n)
	}
	checkLogIndex(t, l)
}

// TestLogRefusesRecordsLongerThanAFrame: a body the bounds allow but a
// frame cannot hold is refused as too large, not written and lost at the
// next open.
func TestLogRefusesRecordsLongerThanAFrame(t *testing.T) {
	defer func(n int) { recordlog.MaxFrameLen = n }(recordlog.MaxFrameLen)
	recordlog.MaxFrameLen = 4096
	l := openLog(t, filepath.Join(t.TempDir(), "log"), nil)
	defer l.Close()
	b := queuebounds.Default()
	if _, err := l.Enqueue(bgc, msg(alice, string(make([]byte, 5000))), b, t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Enqueue of a body longer than a frame = %v, want ErrTooLarge", err)
	}
	mustEnqueue(t, l, msg(alice, string(make([]byte, 3000))), b, t0)
}

// TestLogOpensVersion1Segments: a log written before commit frames
// (segment format version 1) opens with its records, appends go to a new
// segment of the current version, and everything is there after a reopen.
func TestLogOpensVersion1Segments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := bytes.Clone(recordlog.MagicV1)
	old = appendSeqFrame(old, agent, 0)
	for i := range 3 {
		r := msg(alice, fmt.Sprint("old ", i))
		r.Agent, r.Seq, r.EnqueuedAt, r.ExpiresAt = agent, uint64(i+1), t0, t0.Add(time.Hour)
		old = appendRecordFrame(old, r)
	}
	if err := os.WriteFile(filepath.Join(dir, recordlog.Name(1)), old, 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, dir, nil)
	if diff := cmp.Diff([]uint64{1, 2, 3}, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Fatalf("records of a version 1 segment (-want +got):\n%s", diff)
	}
	if r := mustEnqueue(t, l, msg(bob, "new"), queuebounds.Default(), t0); r.Seq != 4 {
		t.Errorf("seq after the version 1 records = %d, want 4", r.Seq)
	}
	if len(l.segs) != 2 || l.segs[1].Version != 2 {
		t.Errorf("%d segments; want the version 1 one and a new one", len(l.segs))
	}
	l.Close()
	l = openLog(t, dir, nil)
	defer l.Close()
	if diff := cmp.Diff([]uint64{1, 2, 3, 4}, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Errorf("records after a reopen (-want +got):\n%s", diff)
	}
}

// TestRepairLog: a log refused as damaged (a byte flipped in a record of
// a middle commit) is repaired: the damaged segment is kept as it was,
// every record that can still be read is kept, the damaged one is
// reported dropped, and the log opens and takes records again.
func TestRepairLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openLog(t, dir, nil)
	b := queuebounds.Default()
	var offs []int64
	for i := range 5 {
		offs = append(offs, l.segs[0].Size)
		mustEnqueue(t, l, msg(alice, fmt.Sprint("record ", i)), b, t0)
	}
	l.Close()
	path := lastSegment(t, dir)
	if err := flipByte(path, offs[2]+20); err != nil { // inside record 3
		t.Fatal(err)
	}
	damaged, _ := os.ReadFile(path)
	if _, err := OpenLog(dir, nil); !errors.As(err, new(*recordlog.DamageError)) {
		t.Fatalf("open before the repair: %v, want a DamageError", err)
	}
	done, err := RepairLog(dir, t0)
	if err != nil || len(done) != 1 || done[0].Path != path || len(done[0].Dropped) != 1 {
		t.Fatalf("RepairLog = %+v, %v", done, err)
	}
	if kept, _ := os.ReadFile(done[0].Copy); !bytes.Equal(kept, damaged) {
		t.Error("the copy of the damaged segment is not the file as it was")
	}
	l = openLog(t, dir, nil)
	defer l.Close()
	if diff := cmp.Diff([]uint64{1, 2, 4, 5}, liveSeqs(t, l, agent, t0)); diff != "" {
		t.Errorf("records after the repair (-want +got):\n%s", diff)
	}
	if r := mustEnqueue(t, l, msg(alice, "after"), b, t0); r.Seq != 6 {
		t.Errorf("seq after the repair = %d, want 6", r.Seq)
	}
	if done, err := RepairLog(filepath.Join(t.TempDir(), "fine"), t0); err != nil || len(done) != 0 {
		t.Errorf("RepairLog of a sound log = %+v, %v; want nothing done", done, err)
	}
}
