package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// queueAnswers returns what s answers for agents: their live records,
// stats, and the seq the next enqueue gets (made on s: call it last).
func queueAnswers(t *testing.T, s Store, agents []string, now time.Time) string {
	t.Helper()
	out := ""
	for _, a := range agents {
		rs, err := s.Next(bgc, a, 0, 1<<20, now)
		st, err2 := s.Stats(bgc, a, now)
		out += fmt.Sprintln(a, rs, err, st, err2)
	}
	for _, a := range agents {
		r, err := s.Enqueue(bgc, Record{Agent: a, From: alice, Body: []byte("next")}, queuebounds.Default(), now)
		out += fmt.Sprintln(a, "next seq", r.Seq, err)
	}
	return out
}

// TestExportBoltRoundTrips: a record log exported to a bbolt queue
// (ExportBolt, the way back to --queue-engine bolt) answers as the log
// does, records, stats and the next seqs (also of an agent whose records
// were all acknowledged), and is consistent; imported again into a new
// log (LogOptions.ImportBolt) it answers the same.
func TestExportBoltRoundTrips(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, LogDir)
	l := openLog(t, dir, &LogOptions{SegmentSize: 2048, ZeroAhead: 256})
	rng := rand.New(rand.NewPCG(5, 6))
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes, b.TTL = 12, 5, 600, 300, time.Hour
	now := t0
	for range 800 {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		randomCall(rng, b, now).run(l)
	}
	r := mustEnqueue(t, l, Record{Agent: "did:key:drained", From: bob, Body: []byte("x")}, b, now)
	if err := l.Ack(bgc, "did:key:drained", []uint64{r.Seq}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	agents := []string{agent, "did:key:a2", "did:key:drained"}
	want := queueAnswers(t, openLog(t, copyDir(t, dir), nil), agents, now)

	db := filepath.Join(data, BoltFile)
	n, err := ExportBolt(dir, db)
	if err != nil || n == 0 {
		t.Fatalf("ExportBolt = %d, %v", n, err)
	}
	if _, err := ExportBolt(dir, db); err == nil {
		t.Error("ExportBolt over an existing file succeeded")
	}
	bs, err := OpenBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, bs)
	bs.Close()
	bolt := copyDir(t, data)
	bs, err = OpenBolt(filepath.Join(bolt, BoltFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := queueAnswers(t, bs, agents, now); got != want {
		t.Errorf("the exported bbolt queue answers:\n%s\nthe log:\n%s", got, want)
	}
	bs.Close()

	back := filepath.Join(t.TempDir(), LogDir)
	l = openLog(t, back, &LogOptions{ImportBolt: db})
	if got := queueAnswers(t, l, agents, now); got != want {
		t.Errorf("the log imported back answers:\n%s\nthe log:\n%s", got, want)
	}
	l.Close()
}

// TestOpenDir: OpenDir opens the record log of a data directory when it
// has one, else its queue.db, and creates nothing in one with neither.
func TestOpenDir(t *testing.T) {
	data := t.TempDir()
	if _, err := OpenDir(data); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenDir of an empty directory = %v, want fs.ErrNotExist", err)
	}
	if des, _ := os.ReadDir(data); len(des) != 0 {
		t.Fatalf("OpenDir created %v", des)
	}
	bs, err := OpenBolt(filepath.Join(data, BoltFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, bs, msg(alice, "in bolt"), queuebounds.Default(), t0)
	bs.Close()
	for _, engine := range []string{"bolt", "log"} {
		if engine == "log" {
			l := openLog(t, filepath.Join(data, LogDir), &LogOptions{ImportBolt: filepath.Join(data, BoltFile)})
			mustEnqueue(t, l, msg(alice, "in the log"), queuebounds.Default(), t0)
			l.Close()
		}
		s, err := OpenDir(data)
		if err != nil {
			t.Fatal(err)
		}
		_, isLog := s.(*Log)
		if got := liveSeqs(t, s, agent, t0); isLog != (engine == "log") || len(got) != map[string]int{"bolt": 1, "log": 2}[engine] {
			t.Errorf("%s: OpenDir gave a %T with records %v", engine, s, got)
		}
		s.Close()
	}
}
