//go:build integration

package relay

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/wake"
)

// awakeAgent runs a real agent (package runtime, always_on, unencrypted
// Governed Objects allowed) linked to the relay at url, and returns once it
// has published its state, so that the relay forwards requests to it live.
func awakeAgent(t *testing.T, url string, key *did.PrivateKey) {
	t.Helper()
	worldtest.RunPublished(t, runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: &deliver.Recorder{}}}},
		Store: runtime.Store{DataDir: t.TempDir()}, Relay: runtime.Relay{URL: url}, Name: "awake",
		Schedule: runtime.Schedule{Mode: wake.AlwaysOn, WindowLength: time.Hour},
		Logger:   slog.New(slog.DiscardHandler),
	})
}

// objectData returns the data of an unencrypted Governed Object part (its
// media type in the data too, so that A2A v0.3 senders keep it) carrying a
// comms:message from the sender.
func objectData(t *testing.T, from *did.PrivateKey) json.RawMessage {
	t.Helper()
	return objectPart(t, from, "urn:torpor:test:relay", "hello").Data
}

// objectPart returns a data part carrying an unencrypted Governed Object,
// a comms:message from the sender of schema whose payload's text is text.
func objectPart(tb testing.TB, from *did.PrivateKey, schema, text string) a2a.Part {
	tb.Helper()
	o, err := governed.Sign(from, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: schema},
		Payload: map[string]string{"text": text}, Purpose: "comms:message", TTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	obj, err := o.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
