//go:build integration

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// answer is what a sender learns from one request.
type answer struct {
	status  int
	Queued  bool            `json:"queued"`
	Kind    string          `json:"kind"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"` // the JSON-RPC error object
}

func (a answer) String() string {
	return fmt.Sprintf("%d queued=%v kind=%q error=%s", a.status, a.Queued, a.Kind, a.Error)
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// body is an A2A 1.0 SendMessage request whose ids are id, carrying a
// Governed Object part (the relay does not look inside the object; a
// message the agent never takes, plain text, would be refused).
func body(id string, size int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"data":{"mediaType":%q,"object":{"filler":%q}}}]}}}`,
		id, id, a2a.MediaTypeDataObject, strings.Repeat("x", size))
}

// send posts body to agent's JSON-RPC endpoint on the relay at addr with
// tok; err is set only when no answer came.
func send(addr, agent, tok string, b []byte) (answer, error) {
	status, raw, err := relaytest.Exchange(client, addr+"/a/"+agent+"/a2a/jsonrpc", "Bearer "+tok, b)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: status}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("answer %d %q: %v", status, raw, err)
	}
	return a, nil
}

// unconfirmed reports whether a is 503 store_unconfirmed: the relay's
// store took the request but did not confirm it, so it may or may not be
// delivered (at most once).
func (a answer) unconfirmed() bool {
	return a.status == http.StatusServiceUnavailable && !a.Queued && bytes.Contains(a.Error, []byte(`"store_unconfirmed"`))
}

// tally counts a load's answers by what each promises about delivery.
type tally struct {
	queued  map[string]bool // ids answered 503 queued: delivered exactly once
	unsure  map[string]bool // ids answered 503 store_unconfirmed: delivered at most once
	refused map[string]int  // the other refusals, by status and message
}

func newTally() tally {
	return tally{queued: map[string]bool{}, unsure: map[string]bool{}, refused: map[string]int{}}
}

// add counts the answer a to the request id and reports whether a relay
// under faults may give it: 503 queued, 503 store_unconfirmed, or a 503
// saying nothing was queued.
func (c tally) add(id string, a answer) bool {
	switch {
	case a.status == http.StatusServiceUnavailable && a.Queued:
		c.queued[id] = true
	case a.unconfirmed():
		c.unsure[id] = true
		c.refused["503 store_unconfirmed"]++
	case a.status == http.StatusServiceUnavailable && strings.Contains(a.Message, "nothing was queued"):
		c.refused[fmt.Sprintf("%d %s", a.status, a.Message)]++
	default:
		return false
	}
	return true
}

// mustQueue sends and fails the test unless the answer is 503 queued.
func mustQueue(t testing.TB, addr, agent, tok string, b []byte) {
	t.Helper()
	a, err := send(addr, agent, tok, b)
	if err != nil || a.status != http.StatusServiceUnavailable || !a.Queued {
		t.Fatalf("send = %v, %v; want 503 queued", a, err)
	}
}

// drain links dev to the relay at addr and pulls every queued record,
// acknowledging each batch when ack is set.
func drain(t testing.TB, addr string, dev *did.PrivateKey, ack bool) []wire.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dialRetrying(t, ctx, addr, dev)
	defer c.Close()
	return relaytest.Pull(t, ctx, c, ack)
}

// recordID returns the JSON-RPC id of a queued request.
func recordID(t testing.TB, r wire.Record) string {
	t.Helper()
	var env struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatalf("record %d is not the JSON sent: %v", r.Seq, err)
	}
	return env.ID
}

// dialRetrying links dev through the relay at addr, dialling again, as a
// device does, while the relay answers 503 (its store cannot decide yet,
// during a leader election).
func dialRetrying(t testing.TB, ctx context.Context, addr string, dev *did.PrivateKey) *link.Client {
	t.Helper()
	for {
		c, err := link.Dial(ctx, link.Config{RelayURL: addr, Audience: publicURL, Key: dev})
		if err == nil {
			return c
		}
		if !strings.Contains(err.Error(), "503") || ctx.Err() != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(err)
		case <-time.After(250 * time.Millisecond): // a real peer's recovery
		}
	}
}
