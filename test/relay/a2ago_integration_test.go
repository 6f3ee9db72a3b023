//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestA2AGoClient drives the official A2A Go SDK (a2a-go v0.3.3, A2A 0.3),
// through docs/a2a.md's Go example (Endpoint, Send), against the real relay:
// a real agent that is awake (package runtime) and one that sleeps. It
// records what the SDK tells its caller:
//   - its card resolver cannot read Torpor's A2A 1.0 card;
//   - awake, a Governed Object gets the agent's message; asleep, the SDK
//     reports only "unexpected HTTP status: 503" and the example reads
//     queued and retryAfterSec from the answer it kept;
//   - plain text gets ErrInvalidParams ("object rejected") awake and
//     asleep alike, and is not queued.
func TestA2AGoClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startRelay(t, t.TempDir())
	awake, asleep, alice := testKey(t, 5), testKey(t, 6), testKey(t, 2)
	awakeAgent(t, p.URL, awake)
	publish(t, p.URL, asleep, "hourly_wake")

	_, err := agentcard.DefaultResolver.Resolve(ctx, p.URL+"/a/"+awake.DID().String())
	if err == nil || !strings.Contains(err.Error(), "unknown security scheme type") {
		t.Errorf("a2a-go's resolver on the A2A 1.0 card: %v; docs/a2a.md says it fails on the security scheme", err)
	}
	var object map[string]any
	if err := json.Unmarshal(objectData(t, alice), &object); err != nil {
		t.Fatal(err)
	}
	text := map[string]any{"note": "no Governed Object here"}

	t.Run("awake", func(t *testing.T) {
		url := endpoint(t, ctx, p.URL, awake.DID().String())
		res, sl, err := Send(ctx, url, relaytest.Token(t, alice, p.URL), object)
		if msg, ok := res.(*a2a.Message); err != nil || sl != nil || !ok || msg.Role != a2a.MessageRoleAgent {
			t.Errorf("Send = %#v, %v, %v; want the agent's message", res, sl, err)
		}
		_, sl, err = Send(ctx, url, relaytest.Token(t, alice, p.URL), text)
		if !errors.Is(err, a2a.ErrInvalidParams) || sl != nil {
			t.Errorf("data without an object: %v, %v; want ErrInvalidParams", sl, err)
		}
	})
	t.Run("asleep", func(t *testing.T) {
		url := endpoint(t, ctx, p.URL, asleep.DID().String())
		_, sl, err := Send(ctx, url, relaytest.Token(t, alice, p.URL), object)
		if err == nil || !strings.Contains(err.Error(), "unexpected HTTP status: 503") {
			t.Errorf("the SDK's error: %v; want unexpected HTTP status: 503", err)
		}
		if sl == nil || !sl.Queued || sl.RetryAfterSec < 1 || sl.RetryAfterSec > 3600 {
			t.Errorf("the relay's answer: %+v; want queued, retryAfterSec 1..3600", sl)
		}
		_, sl, err = Send(ctx, url, relaytest.Token(t, alice, p.URL), text)
		if !errors.Is(err, a2a.ErrInvalidParams) || sl != nil {
			t.Errorf("data without an object: %v, %v; want ErrInvalidParams, as awake", sl, err)
		}
	})
	if recs := pullAll(t, p.URL, asleep); len(recs) != 1 || recs[0].From != alice.DID().String() {
		t.Errorf("queued for the sleeping agent: %d records; want the one Governed Object from Alice", len(recs))
	}
}

func endpoint(t *testing.T, ctx context.Context, relay, agent string) string {
	t.Helper()
	url, err := Endpoint(ctx, relay+"/a/"+agent)
	if err != nil {
		t.Fatal(err)
	}
	if url != relay+"/a/"+agent+"/a2a/jsonrpc" {
		t.Errorf("Endpoint = %s", url)
	}
	return url
}
