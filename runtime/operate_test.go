package runtime_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
)

// TestPipelineHaltCancelsEffectsInFlight: Pipeline.Halt, which the MQTT
// command and torpor-agent halt both run, records who halted and cancels
// a confirmed action's effect while it runs.
func TestPipelineHaltCancelsEffectsInFlight(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), runtime.DBFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	started := make(chan struct{})
	effect := deliver.HandlerFunc(func(ctx context.Context, d deliver.Delivery) (deliver.Outcome, error) {
		close(started)
		<-ctx.Done() // an effect that runs until it is cancelled
		return deliver.Outcome{}, ctx.Err()
	})
	alice := runtimetest.Key(t, 1)
	p, err := runtime.OpenPipeline(db, runtime.PipelineConfig{Key: runtimetest.Key(t, 9), Owner: alice.DID(),
		Purposes: purpose.Set{"action:*"}, Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
		Routes: []deliver.Route{{Pattern: "*", Name: "effect", Handler: effect}}, Clock: clocktest.New(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obj := runtimetest.Object(t, alice, "action:open-valve", t0, time.Hour, map[string]any{"idempotencyKey": "valve-7"})
	if rep, err := p.Batch(ctx, []drain.Record{{Seq: 1, From: alice.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, obj))}}, nil); err != nil || rep.Held != 1 {
		t.Fatalf("batch: %v, %v; want the action held", rep, err)
	}
	hs, err := p.Holds()
	if err != nil || len(hs) != 1 {
		t.Fatalf("holds %v, %v", hs, err)
	}
	confirmed := make(chan error, 1)
	go func() { _, err := p.Confirm(ctx, hs[0].Action.LedgerKey()); confirmed <- err }()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the confirmed action never started")
	}
	if err := p.Halt("local user tester (torpor-agent halt)", "lost phone"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-confirmed:
	case <-ctx.Done():
		t.Fatal("the effect in flight was not cancelled by the halt")
	}
	r, err := p.Report(10)
	if err != nil || !r.Halt.Halted || r.Halt.Note != "lost phone — local user tester (torpor-agent halt)" {
		t.Errorf("halt after Pipeline.Halt: %+v, %v", r.Halt, err)
	}
	if e, err := p.Entry(hs[0].Action.LedgerKey()); err != nil || !strings.Contains(e.State.String(), "indeterminate") {
		t.Errorf("the cancelled effect's key: %+v, %v; want indeterminate (it may have happened)", e, err)
	}
}
