//go:build integration

package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// TestCrashKeepsEveryQueuedAnswer kills the real torpor-relay with SIGKILL
// while 32 senders enqueue for a sleeping agent, at a random point (after a
// random number of 503 answers), 20 times. After each restart every message
// that was answered 503 queued:true must be in the queue, whole; any other
// message present must be one whose answer the kill cut off; no record may
// be torn or duplicated. It runs on --queue-engine bolt;
// TestCrashKeepsEveryQueuedAnswerLog on the default, the record log.
func TestCrashKeepsEveryQueuedAnswer(t *testing.T) {
	crashKeepsEveryQueuedAnswer(t, "--queue-engine", "bolt")
}

// TestCrashKeepsEveryQueuedAnswerLog is TestCrashKeepsEveryQueuedAnswer
// on the record log (--queue-engine log, the default).
func TestCrashKeepsEveryQueuedAnswerLog(t *testing.T) {
	crashKeepsEveryQueuedAnswer(t, "--queue-engine", "log")
}

func crashKeepsEveryQueuedAnswer(t *testing.T, flags ...string) {
	const trials, senders, perSender = 20, 32, 300
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dev := relaytest.Key(t, 1)
	// --allow-agent: the device is admitted, not on a new device's probation.
	big := append([]string{"--max-messages", "1000000", "--max-per-peer", "1000000", "--max-bytes", "1000000000", "--max-peer-bytes", "1000000000", "--allow-agent", dev.DID().String()}, flags...)
	keys := make([]string, senders)
	for s := range senders {
		keys[s] = relaytest.Key(t, 100+s).DID().String()
	}
	for trial := range trials {
		dir := t.TempDir()
		p := startRelay(t, dir, big...)
		publish(t, p.URL, dev, "sleep")
		killAt := int64(1 + rng.IntN(600))
		sent, queued := crashRun(t, p, dev.DID().String(), senders, perSender, killAt, rng.Uint64())

		p2 := startRelay(t, dir, big...)
		recs := pullAll(t, p2.URL, dev)
		seen := map[string]bool{}
		for _, r := range recs {
			var env struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(r.Body, &env); err != nil {
				t.Fatalf("trial %d: torn record %d: %v (%d bytes)", trial, r.Seq, err, len(r.Body))
			}
			m, ok := sent[env.ID]
			switch {
			case !ok:
				t.Fatalf("trial %d: record %s was never sent", trial, env.ID)
			case !bytes.Equal(m.body, r.Body):
				t.Fatalf("trial %d: record %s differs from what was sent", trial, env.ID)
			case seen[env.ID]:
				t.Fatalf("trial %d: record %s is duplicated", trial, env.ID)
			case r.From != keys[m.sender]:
				t.Fatalf("trial %d: record %s from %s, want %s", trial, env.ID, r.From, keys[m.sender])
			}
			seen[env.ID] = true
		}
		lost := 0
		for id := range queued {
			if !seen[id] {
				lost++
				t.Errorf("trial %d: %s was answered 503 queued:true but is not in the queue", trial, id)
			}
		}
		t.Logf("trial %d: kill after %d answers; %d answered queued, %d present after restart, %d extra (answer cut off), %d lost",
			trial, killAt, len(queued), len(recs), len(recs)-(len(queued)-lost), lost)
		p2.Kill()
	}
}

type sentMsg struct {
	sender int
	body   []byte
}

// crashRun sends until the relay is killed after killAt queued answers and
// returns every message sent (whose answer may have been cut off) and the
// ids answered 503 queued:true.
func crashRun(t *testing.T, p *relayProc, agent string, senders, perSender int, killAt int64, seed uint64) (map[string]sentMsg, map[string]bool) {
	url := p.URL + "/a/" + agent + "/a2a/jsonrpc"
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	defer client.CloseIdleConnections()
	var (
		mu       sync.Mutex
		sent     = map[string]sentMsg{}
		queued   = map[string]bool{}
		answered atomic.Int64
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for s := range senders {
		tok := relaytest.Token(t, relaytest.Key(t, 100+s), p.URL)
		rng := rand.New(rand.NewPCG(seed, uint64(s)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSender {
				id := fmt.Sprintf("s%d-%d", s, i)
				body := crashBody(id, 50+rng.IntN(4000))
				mu.Lock()
				sent[id] = sentMsg{sender: s, body: body}
				mu.Unlock()
				status, b, err := relaytest.Exchange(client, url, "Bearer "+tok, body)
				if err != nil {
					return // the relay is gone; the answer was cut off
				}
				var a struct {
					Queued bool `json:"queued"`
				}
				if status != 503 || json.Unmarshal(b, &a) != nil || !a.Queued {
					t.Errorf("%s: answer %d %s", id, status, b)
					return
				}
				mu.Lock()
				queued[id] = true
				mu.Unlock()
				if answered.Add(1) == killAt {
					killOnce.Do(func() { p.Cmd.Process.Kill() })
				}
			}
		}()
	}
	wg.Wait()
	p.Kill()
	if answered.Load() < killAt {
		t.Fatalf("only %d answers before the senders stopped; kill point %d not reached", answered.Load(), killAt)
	}
	return sent, queued
}

// crashBody returns a SendMessage request whose one part is a Governed
// Object part of about n bytes; the relay does not look inside the object.
// (A message the agent never takes, such as text, would be refused.)
func crashBody(id string, n int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"data":{"mediaType":%q,"object":{"filler":%q}}}]}}}`,
		id, id, a2a.MediaTypeDataObject, strings.Repeat("x", n))
}
