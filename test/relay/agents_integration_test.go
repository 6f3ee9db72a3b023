//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/wake"
)

// awakeAgent runs a real agent (package runtime, always_on, unencrypted
// Governed Objects allowed) linked to the relay at url, and returns once it
// has published its state, so that the relay forwards requests to it live.
func awakeAgent(t *testing.T, url string, key *did.PrivateKey) {
	t.Helper()
	published := make(chan struct{}, 1)
	app := deliver.HandlerFunc(func(context.Context, deliver.Delivery) (deliver.Outcome, error) {
		return deliver.Outcome{OK: true}, nil
	})
	a, err := runtime.New(runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: app}}},
		Store: runtime.Store{DataDir: t.TempDir()}, Relay: runtime.Relay{URL: url}, Name: "awake",
		Schedule: runtime.Schedule{Mode: wake.AlwaysOn, WindowLength: time.Hour},
		Logger:   slog.New(slog.DiscardHandler),
		Hooks: runtime.Hooks{OnPhase: func(p runtime.Phase) {
			if p.Name == runtime.PhasePublish {
				select {
				case published <- struct{}{}:
				default:
				}
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("agent: %v", err)
		}
	})
	select {
	case <-published:
	case err := <-done:
		t.Fatalf("agent stopped before it published: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not publish its state within 30 s")
	}
}

// objectData returns the data of an unencrypted Governed Object part (its
// media type in the data too, so that A2A v0.3 senders keep it) carrying a
// comms:message from the sender.
func objectData(t *testing.T, from *did.PrivateKey) json.RawMessage {
	t.Helper()
	o, err := governed.Sign(from, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: "urn:torpor:test:relay"},
		Payload: map[string]string{"text": "hello"}, Purpose: "comms:message", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		t.Fatal(err)
	}
	return p.Data
}
