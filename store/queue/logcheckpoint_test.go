package queue

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// dumpIndex returns l's index as text: per agent (sorted) its counters,
// and each live entry with its sender's name.
func dumpIndex(l *Log) string {
	var names []string
	for name := range l.index.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		a := l.index.agents[name]
		fmt.Fprintf(&b, "%s %+v\n", name, a.c)
		for _, e := range a.live {
			fmt.Fprintf(&b, "  %d seg %d off %d n %d size %d from %q kind %d exp %d pending %v\n",
				e.seq, e.seg, e.off, e.n, e.size, l.index.senders.names[e.from], e.kind, e.expires, e.pending)
		}
	}
	for _, s := range l.segs {
		fmt.Fprintf(&b, "segment %d live %d records %d\n", s.ID, s.Live, s.Records)
	}
	return b.String()
}

// openCopy opens a copy of dir, as a crash would leave it (with the
// checkpoint, or without when noCheckpoint), and returns its index as
// text and why it ignored the checkpoint.
func openCopy(t *testing.T, dir string, noCheckpoint bool) (string, error) {
	t.Helper()
	cp := copyDir(t, dir)
	if noCheckpoint {
		os.Remove(filepath.Join(cp, checkpointFile))
	}
	l := openLog(t, cp, nil)
	defer l.Close()
	checkLogIndex(t, l)
	return dumpIndex(l), l.CheckpointIgnored()
}

// TestLogCheckpoint: the index a log opens with from its checkpoint (the
// one written at the last rotation, or at Close) and the frames after it
// is the one it gets reading every segment, after random enqueues, acks
// and purges with segments small enough to rotate, move records forward
// and delete segments.
func TestLogCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{SegmentSize: 2048, ZeroAhead: 256}
	l := openLog(t, dir, o)
	defer func() { l.Close() }()
	rng := rand.New(rand.NewPCG(3, 4))
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes, b.TTL = 12, 5, 600, 300, time.Minute
	now, used := t0, 0
	for i := range 1500 {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		randomCall(rng, b, now).run(l)
		if i%100 != 99 {
			continue
		}
		if i%500 == 499 {
			l.Close()
			l = openLog(t, dir, o)
			if err := l.CheckpointIgnored(); err != nil || !l.ckFresh {
				t.Fatalf("reopened after Close: checkpoint ignored (%v) or not fresh (%v)", err, l.ckFresh)
			}
		}
		l.ckWriters.Wait()
		want, _ := openCopy(t, dir, true)
		got, ignored := openCopy(t, dir, false)
		if ignored != nil {
			t.Fatalf("call %d: %v", i, ignored)
		}
		if _, err := os.Stat(filepath.Join(dir, checkpointFile)); err == nil {
			used++
		}
		if got != want {
			t.Fatalf("call %d: the index from the checkpoint:\n%s\nfrom the segments:\n%s", i, got, want)
		}
	}
	if l.ckErr != nil {
		t.Errorf("writing a checkpoint failed: %v", l.ckErr)
	}
	if used < 10 {
		t.Errorf("a checkpoint was there at %d of 15 crashes, want at least 10", used)
	}
}

// TestLogCheckpointIgnored: a checkpoint that is damaged, or that no
// longer matches the segments (a segment it covers was deleted since, or
// rewritten), is ignored, and said so; the log opens from its segments
// with every record.
func TestLogCheckpointIgnored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	o := &LogOptions{SegmentSize: 1024, ZeroAhead: 64}
	l := openLog(t, dir, o)
	keep := mustEnqueue(t, l, Record{Agent: "did:key:asleep", From: alice, Body: []byte("kept")}, queuebounds.Default(), t0)
	l.Close()
	old, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, o)
	for i := range 100 { // rotates and deletes the segments old covers
		r := mustEnqueue(t, l, msg(bob, fmt.Sprint("drained ", i)), queuebounds.Default(), t0)
		if err := l.Ack(bgc, agent, []uint64{r.Seq}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	fresh, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		t.Fatal(err)
	}
	damaged := slices.Clone(fresh)
	damaged[len(damaged)/2] ^= 0x10
	rewritten := otherLogCheckpoint(t, o, old)
	for name, ck := range map[string][]byte{"damaged": damaged, "stale": old, "cut": fresh[:len(fresh)-5], "another log's": rewritten} {
		t.Run(name, func(t *testing.T) {
			cp := copyDir(t, dir)
			if err := os.WriteFile(filepath.Join(cp, checkpointFile), ck, 0o600); err != nil {
				t.Fatal(err)
			}
			l := openLog(t, cp, o)
			defer l.Close()
			if l.CheckpointIgnored() == nil {
				t.Error("the checkpoint was used")
			}
			checkLogIndex(t, l)
			if got := liveSeqs(t, l, "did:key:asleep", t0); !slices.Equal(got, []uint64{keep.Seq}) {
				t.Errorf("live records %v, want %v", got, keep.Seq)
			}
			if got := liveSeqs(t, l, agent, t0); len(got) != 0 {
				t.Errorf("acknowledged records came back: %v", got)
			}
		})
	}
}

// otherLogCheckpoint writes another log with the same segments as the one
// whose first checkpoint is old, and other commits: old's position is in
// the same place of its segment, not after the same bytes. It checks that
// this log ignores old, and returns its own checkpoint.
func otherLogCheckpoint(t *testing.T, o *LogOptions, old []byte) []byte {
	t.Helper()
	other := filepath.Join(t.TempDir(), "other")
	l := openLog(t, other, o)
	mustEnqueue(t, l, Record{Agent: "did:key:asleep", From: alice, Body: []byte("othr")}, queuebounds.Default(), t0)
	l.Close()
	own, err := os.ReadFile(filepath.Join(other, checkpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, checkpointFile), old, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, other, o)
	defer l.Close()
	if l.CheckpointIgnored() == nil {
		t.Error("the checkpoint of another log's commits was used")
	}
	if rs, err := l.Next(bgc, "did:key:asleep", 0, 10, t0); err != nil || len(rs) != 1 || string(rs[0].Body) != "othr" {
		t.Errorf("Next = %v, %v; want the other log's record", rs, err)
	}
	return own
}
