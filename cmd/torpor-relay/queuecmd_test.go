package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestQueueRepair: a relay whose record log is damaged refuses to start
// with an error naming the file, the offset and the fix; torpor-relay
// queue repair keeps a copy, says what it dropped, and the queue opens
// with the records it could read.
func TestQueueRepair(t *testing.T) {
	data, now := t.TempDir(), time.Now()
	filledLog(t, data, now, "one", "two", "three")
	seg := filepath.Join(data, "queue.log", recordlog.Name(1))
	rewrite(t, seg, func(b []byte) []byte {
		b[bytes.Index(b, []byte("two"))] ^= 0x40
		return b
	})
	_, err := openQueue(data, "log", slog.New(slog.DiscardHandler))
	var de *recordlog.DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "torpor-relay queue repair") || !strings.Contains(err.Error(), "--reinitialise") {
		t.Fatalf("start with a damaged log: %v; want a refusal naming %s, the offset and the fix", err, seg)
	}
	var out, errOut bytes.Buffer
	if code := queueCommand([]string{"repair", "--data-dir", data}, &out, &errOut); code != 0 {
		t.Fatalf("queue repair exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "kept as "+seg+".damaged-") || !strings.Contains(out.String(), "dropped") {
		t.Errorf("queue repair said %q", out.String())
	}
	q, err := openQueue(data, "log", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rs, err := q.Next(context.Background(), "did:key:a", 0, 10, now)
	if err != nil || len(rs) != 2 || string(rs[0].Body) != "one" || string(rs[1].Body) != "three" {
		t.Errorf("records after the repair: %d, %v; want one and three", len(rs), err)
	}
}

// TestQueueTornTailLogged: the relay logs the torn tail the record log
// cut at start (the library does not log): the file, the offset and the
// copy it kept.
func TestQueueTornTailLogged(t *testing.T) {
	data := t.TempDir()
	filledLog(t, data, time.Now(), "kept")
	seg := filepath.Join(data, "queue.log", recordlog.Name(1))
	rewrite(t, seg, func(b []byte) []byte {
		end := len(recordlog.Magic)
		for {
			_, _, n, err := recordlog.Decode(b[end:])
			if err != nil {
				break
			}
			end += n
		}
		torn := []byte{40, 0, 0, 0, 1, 2, 3, 4, 'R', 'x'} // a frame cut short after the last commit
		return append(b[:end:end], torn...)
	})
	var logged bytes.Buffer
	q, err := openQueue(data, "log", slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	line := logged.String()
	if !strings.Contains(line, "torn tail") || !strings.Contains(line, seg) || !strings.Contains(line, "offset=") || !strings.Contains(line, ".cut-") {
		t.Errorf("logged %q; want the torn tail with its file, offset and copy", line)
	}
}

// TestQueueExportBolt: the way back from the log engine. torpor-relay
// queue export-bolt writes queue.db from the record log and keeps the log
// aside; the bolt engine then serves the same records and seqs, refuses
// a second export, and the log engine imports queue.db again.
func TestQueueExportBolt(t *testing.T) {
	data := t.TempDir()
	ctx, now := context.Background(), time.Now()
	q, err := openQueue(data, "log", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var last queue.Record
	for _, body := range []string{"one", "two", "three"} {
		if last, err = q.Enqueue(ctx, queue.Record{Agent: "did:key:a", From: "did:key:s", Body: []byte(body)}, queuebounds.Default(), now); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Ack(ctx, "did:key:a", []uint64{1, last.Seq}); err != nil {
		t.Fatal(err)
	}
	q.Close()
	var out, errOut bytes.Buffer
	if code := queueCommand([]string{"export-bolt", "--data-dir", data}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "wrote 1 records") {
		t.Fatalf("queue export-bolt exited %d: %s%s", code, out.String(), errOut.String())
	}
	if code := queueCommand([]string{"export-bolt", "--data-dir", data}, &out, &errOut); code == 0 {
		t.Error("a second export-bolt, with queue.db there and no log, succeeded")
	}
	for _, engine := range []string{"bolt", "log"} {
		q, err := openQueue(data, engine, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s after the export: %v", engine, err)
		}
		rs, err := q.Next(ctx, "did:key:a", 0, 10, now)
		want := map[string]int{"bolt": 1, "log": 2}[engine] // and "four", which bolt queued
		if err != nil || len(rs) != want || string(rs[0].Body) != "two" || rs[0].Seq != 2 {
			t.Errorf("%s after the export: Next = %v, %v; want record 2 and %d in all", engine, rs, err, want)
		}
		if engine == "bolt" {
			r, err := q.Enqueue(ctx, queue.Record{Agent: "did:key:a", Body: []byte("four")}, queuebounds.Default(), now)
			if err != nil || r.Seq != last.Seq+1 {
				t.Errorf("bolt after the export: Enqueue = seq %d, %v; want %d", r.Seq, err, last.Seq+1)
			}
		}
		q.Close()
	}
}

// TestQueueCheckpointIgnoredLogged: the relay logs at WARN an index
// checkpoint the record log did not use (the library does not log), and
// serves every record.
func TestQueueCheckpointIgnoredLogged(t *testing.T) {
	data, now := t.TempDir(), time.Now()
	filledLog(t, data, now, "kept") // closing the queue writes the checkpoint
	rewrite(t, filepath.Join(data, "queue.log", "index.checkpoint"), func(b []byte) []byte {
		b[len(b)/2] ^= 1
		return b
	})
	var logged bytes.Buffer
	q, err := openQueue(data, "log", slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if line := logged.String(); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "checkpoint was not used") || !strings.Contains(line, "damaged") {
		t.Errorf("logged %q; want a warning that the checkpoint was not used, and why", line)
	}
	if rs, err := q.Next(context.Background(), "did:key:a", 0, 10, now); err != nil || len(rs) != 1 {
		t.Errorf("Next = %v, %v; want the record", rs, err)
	}
}

// filledLog opens the log engine over data, enqueues a record of each
// body for did:key:a at now and closes the queue.
func filledLog(t *testing.T, data string, now time.Time, bodies ...string) {
	t.Helper()
	q, err := openQueue(data, "log", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range bodies {
		if _, err := q.Enqueue(context.Background(), queue.Record{Agent: "did:key:a", Body: []byte(body)}, queuebounds.Default(), now); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
}

// rewrite replaces the file at path with what edit makes of its bytes.
func rewrite(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}
