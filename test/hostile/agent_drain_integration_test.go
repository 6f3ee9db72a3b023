//go:build integration

package hostile

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// wakeRE reads the drain counters of torpor-agent's wake line.
var wakeRE = regexp.MustCompile(`msg=wake .*drain="records=(\d+) acked=(\d+) deferred=(\d+)`)

// TestAgentRefusedRecordAckedOnce: records the relay queues but the device
// judges and refuses (a purpose outside its allowlist, an object whose
// signature fails, and bodies that are not JSON-RPC message submissions,
// which an older relay queued) are acknowledged at the device's next wake and reported
// with their cause, next to an accepted one; they are gone from the relay,
// and the wake after that drains nothing: never redelivered at every wake.
func TestAgentRefusedRecordAckedOnce(t *testing.T) {
	r := startRelay(t)
	dev := key(t, 40)
	sender := key(t, 41)
	d := agNewDevice(t)
	d.key = testenv.KeyFile(t, dev)
	args := []string{"--config", d.config, "--key", d.key, "--data-dir", d.data, "--relay", r.URL, "--mode", "sleep",
		"--purposes", "comms:*", "--allow-plaintext", "--handler", "comms:*=exec:/bin/true"}
	agent := testenv.Start(t, agBinary(t), args...)
	agent.Wait(t, wakeRE) // booted, published its card (plaintext allowed), asleep
	if err := agent.Stop(); err != nil {
		t.Fatalf("stopping the agent: %v", err)
	}
	now := time.Now().Add(-time.Minute)
	bodies := map[string][]byte{
		"ok":        runtimetest.Body(t, runtimetest.DataPart(t, runtimetest.Object(t, sender, "comms:message", now, time.Hour, nil))),
		"purpose":   runtimetest.Body(t, runtimetest.DataPart(t, runtimetest.Object(t, sender, "coordination:proposal", now, time.Hour, nil))),
		"signature": runtimetest.Body(t, runtimetest.DataPart(t, bytes.Replace(runtimetest.Object(t, sender, "comms:message", now, time.Hour, nil), []byte("hello"), []byte("jello"), 1))),
	}
	for name, b := range bodies {
		if a := send(t, r.URL, dev.DID().String(), sender, "1.0", string(b)); a.Status != http.StatusServiceUnavailable {
			t.Fatalf("%s: %s, want 503 queued", name, a)
		}
	}
	// Bodies this relay refuses at enqueue, queued by the relay before it
	// did (a queue.db from an older version): the device must clear them.
	r = queueOld(t, r, dev.DID().String(), sender.DID().String(), oldBodies)
	args[7] = r.URL
	if n := len(queued(t, r.URL, dev)); n != len(bodies)+len(oldBodies) {
		t.Fatalf("relay holds %d records, want %d", n, len(bodies)+len(oldBodies))
	}
	agent = testenv.Start(t, agBinary(t), args...)
	m := agent.Wait(t, wakeRE)
	if m[1] != "6" || m[2] != "6" || m[3] != "0" {
		t.Fatalf("wake drained records=%s acked=%s deferred=%s, want 6 6 0", m[1], m[2], m[3])
	}
	if n := agent.Count(regexp.MustCompile(`msg="record rejected or deferred"`), "cause=opaque"); n != len(oldBodies) {
		t.Fatalf("%d records reported opaque, want %d", n, len(oldBodies))
	}
	agent.Wait(t, regexp.MustCompile(`msg="record rejected or deferred"`), "cause=purpose-not-permitted")
	agent.Wait(t, regexp.MustCompile(`msg="record rejected or deferred"`), "cause=signature-invalid")
	agent.Stop()
	if left := queued(t, r.URL, dev); len(left) != 0 {
		t.Fatalf("relay still holds %d records after the wake", len(left))
	}
	agent = testenv.Start(t, agBinary(t), args...)
	if m := agent.Wait(t, wakeRE); m[1] != "0" {
		t.Fatalf("the next wake drained %s records, want 0 (nothing redelivered)", m[1])
	}
	agent.Stop()
}

// oldBodies are bodies the relay now refuses at enqueue: not JSON, not a
// message submission, a member twice.
var oldBodies = []string{"not json", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"SendMessage","method":"GetTask","params":{}}`}

// queueOld stops r, writes bodies for agent into its queue (whichever
// engine its data directory holds, queue.OpenDir) as an older relay that
// stored them would have, and starts the relay again on its files.
func queueOld(t *testing.T, r *relayProc, agent, from string, bodies []string) *relayProc {
	t.Helper()
	r.Stop()
	q, err := queue.OpenDir(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		rec := queue.Record{Agent: agent, From: from, Body: []byte(b)}
		if _, err := q.Enqueue(context.Background(), rec, queuebounds.Default(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	q.Close()
	return startRelayIn(t, r.Dir)
}

// TestAgentFailedHandOffReported: an accepted object whose handler fails
// (its program cannot be started: the handler is down) is never dropped
// silently: the wake counts it (handOffFailed=1) and logs it at WARN with
// the object and what happens next, in both notify modes; as the handler
// certainly did not receive it, both modes hand it over again at the next
// start and warn again when that fails.
func TestAgentFailedHandOffReported(t *testing.T) {
	for _, mode := range []string{"at-most-once", "at-least-once"} {
		t.Run(mode, func(t *testing.T) {
			r := startRelay(t)
			dev, sender := key(t, 50), key(t, 51)
			d := agNewDevice(t)
			d.key = testenv.KeyFile(t, dev)
			args := []string{"--config", d.config, "--key", d.key, "--data-dir", d.data, "--relay", r.URL, "--mode", "sleep",
				"--purposes", "comms:*", "--allow-plaintext", "--handler", "comms:*=exec:" + filepath.Join(d.dir, "no-such-handler"), "--notify", mode}
			agent := testenv.Start(t, agBinary(t), args...)
			agent.Wait(t, wakeRE)
			agent.Stop()
			obj := runtimetest.Object(t, sender, "comms:message", time.Now().Add(-time.Minute), time.Hour, nil)
			if a := send(t, r.URL, dev.DID().String(), sender, "1.0", string(runtimetest.Body(t, runtimetest.DataPart(t, obj)))); a.Status != http.StatusServiceUnavailable {
				t.Fatalf("send: %s, want 503 queued", a)
			}
			agent = testenv.Start(t, agBinary(t), args...)
			agent.Wait(t, wakeRE, "accepted=1", "delivered=0", "handOffFailed=1")
			want := "certainly did not receive it" // at-most-once: kept, as the program never started
			if mode == "at-least-once" {
				want = "kept for another attempt"
			}
			agent.Wait(t, regexp.MustCompile(`level=WARN msg="hand-off failed"`), "cause=hand-off-failed", want)
			agent.Stop()
			agent = testenv.Start(t, agBinary(t), args...)
			agent.Wait(t, wakeRE)
			if again := agent.Count(regexp.MustCompile(`level=WARN msg="hand-off failed again`)); again != 1 {
				t.Fatalf("%d warnings of a failed redelivery at the next start, want 1", again)
			}
			agent.Stop()
		})
	}
}
