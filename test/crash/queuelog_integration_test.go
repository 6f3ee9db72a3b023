//go:build integration

package crash

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

const logChildEnv = "TORPOR_CRASH_CHILD_LOG"

// logOptions are small, so that the children rotate segments, copy
// records forward and delete segments while they are killed.
var logOptions = &queue.LogOptions{SegmentSize: 32 << 10, ZeroAhead: 8 << 10}

var logAgents = []string{"did:key:zA", "did:key:zB", "did:key:zC"}

// TestQueueLogCrashChild is the child process of TestQueueLogCrash: eight
// senders enqueue to three agents and print "queued <agent> <seq> <body>"
// once Enqueue returned; a drainer reads records and prints "acking" for
// each before its Ack and "acked" after it returned. It runs until killed.
func TestQueueLogCrashChild(t *testing.T) {
	dir := os.Getenv(logChildEnv)
	if dir == "" {
		t.Skip("child process of TestQueueLogCrash")
	}
	q, err := queue.OpenLog(dir, logOptions)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		mu.Unlock()
	}
	b := unbounded()
	trial := os.Getenv("TORPOR_CRASH_TRIAL")
	for w := range 8 {
		go func() {
			for n := 0; ; n++ {
				body := fmt.Sprintf("t%s-w%d-%d", trial, w, n)
				r, err := q.Enqueue(context.Background(), queue.Record{Agent: logAgents[n%3], From: "did:key:zS", Body: []byte(body + strings.Repeat(".", rand.IntN(300)))}, b, issued)
				if err != nil {
					say("error %v", err)
					return
				}
				say("queued %s %d %s", r.Agent, r.Seq, body)
			}
		}()
	}
	drain(q, say)
}

// unbounded returns bounds that refuse nothing the test sends.
func unbounded() queuebounds.Bounds {
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes = 1<<30, 1<<30, 1<<50, 1<<50
	return b
}

// drain acknowledges up to 3 records of each agent in turn, forever.
func drain(q queue.Store, say func(string, ...any)) {
	for i := 0; ; i++ {
		a := logAgents[i%3]
		rs, err := q.Next(context.Background(), a, 0, 3, issued)
		if err != nil {
			say("error %v", err)
			return
		}
		var seqs []uint64
		for _, r := range rs {
			say("acking %s %d", a, r.Seq)
			seqs = append(seqs, r.Seq)
		}
		if err := q.Ack(context.Background(), a, seqs); err != nil {
			say("error %v", err)
			return
		}
		for _, s := range seqs {
			say("acked %s %d", a, s)
		}
	}
}

// logState is what the children reported, by "agent seq".
type logState struct {
	queued  map[string]string // body
	acking  map[string]bool
	acked   map[string]bool
	lastSeq map[string]uint64
}

// TestQueueLogCrash kills the child with SIGKILL after a random number of
// reported lines, 12 times over one log directory, and after each kill
// opens the log and checks every record a child was told is queued: it is
// there with its body unless its acknowledgement started, it is gone if
// its acknowledgement returned, and the next seq of each agent is above
// every seq a child was ever told.
func TestQueueLogCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "queue.log")
	st := logState{queued: map[string]string{}, acking: map[string]bool{}, acked: map[string]bool{}, lastSeq: map[string]uint64{}}
	for trial := range 12 {
		lines := runLogChild(t, dir, trial, 50+rand.IntN(2000))
		for _, line := range lines {
			st.record(t, line)
		}
		checkLog(t, dir, trial, &st)
	}
}

func (st *logState) record(t *testing.T, line string) {
	var agent, body string
	var seq uint64
	switch {
	case strings.HasPrefix(line, "queued "):
		fmt.Sscan(strings.TrimPrefix(line, "queued "), &agent, &seq, &body)
		k := fmt.Sprint(agent, " ", seq)
		if _, dup := st.queued[k]; dup {
			t.Fatalf("seq %s given twice", k)
		}
		st.queued[k] = body
		st.lastSeq[agent] = max(st.lastSeq[agent], seq)
	case strings.HasPrefix(line, "acking "):
		st.acking[strings.TrimPrefix(line, "acking ")] = true
	case strings.HasPrefix(line, "acked "):
		st.acked[strings.TrimPrefix(line, "acked ")] = true
	case strings.HasPrefix(line, "error "):
		t.Fatalf("child: %s", line)
	}
}

// checkLog opens the log and checks it against st.
func checkLog(t *testing.T, dir string, trial int, st *logState) {
	t.Helper()
	q, err := queue.OpenLog(dir, logOptions)
	if err != nil {
		t.Fatalf("trial %d: open after the kill: %v", trial, err)
	}
	defer q.Close()
	present := map[string]string{}
	for _, a := range logAgents {
		rs, err := q.Next(context.Background(), a, 0, 1<<20, issued)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			present[fmt.Sprint(a, " ", r.Seq)] = strings.TrimRight(string(r.Body), ".")
		}
	}
	for k, body := range st.queued {
		got, ok := present[k]
		switch {
		case st.acked[k] && ok:
			t.Errorf("trial %d: record %s is back after its Ack returned", trial, k)
		case !st.acking[k] && !ok:
			t.Errorf("trial %d: record %s, reported queued, is lost", trial, k)
		case ok && got != body:
			t.Errorf("trial %d: record %s holds %q, want %q", trial, k, got, body)
		}
	}
	for _, a := range logAgents {
		r, err := q.Enqueue(context.Background(), queue.Record{Agent: a, Body: []byte("probe")}, unbounded(), issued)
		if err != nil || r.Seq <= st.lastSeq[a] {
			t.Fatalf("trial %d: enqueue after the kill to %s = %d, %v; want a seq above %d", trial, a, r.Seq, err, st.lastSeq[a])
		}
		st.lastSeq[a] = r.Seq
		st.queued[fmt.Sprint(a, " ", r.Seq)] = "probe"
	}
	t.Logf("trial %d: %d records reported, %d acknowledged, %d present", trial, len(st.queued), len(st.acked), len(present))
}

// runLogChild starts the child over dir, kills it once it has printed
// killAfter lines, and returns every line it printed.
func runLogChild(t *testing.T, dir string, trial, killAfter int) []string {
	t.Helper()
	return killChild(t, "TestQueueLogCrashChild", logChildEnv+"="+dir, trial, killAfter, func(l string) (string, bool) { return l, true })
}
