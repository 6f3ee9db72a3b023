package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// trialSlots returns A/B slots whose slot a holds build 1 on trial (the
// build the agent runs, not proved yet), and the hand-off torpor-agent
// gives Updates.OnVerified (cmd/torpor-agent install.go): the verified
// build goes on trial under its signed version.
func trialSlots(t *testing.T) (*slots.Slots, func(string, update.Result) error) {
	t.Helper()
	dir := t.TempDir()
	s := slots.New(filepath.Join(dir, "slots"), nil)
	first := filepath.Join(dir, "build-1")
	if err := os.WriteFile(first, []byte("build 1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Install(first, "1", "0.9.0", slots.TrialOptions{}); err != nil {
		t.Fatal(err)
	}
	return s, func(path string, res update.Result) error {
		return s.Install(path, strconv.FormatUint(res.Custom.Version, 10), "0.9.0", slots.TrialOptions{})
	}
}

// TestAnOfferWaitsForTheTrial: a rollout offers build 2 while build 1 is
// on trial. The agent verifies it, reports it waiting for the trial
// (outcome waiting, reason trial), and the rollout keeps the device
// pending and offered; once the trial build proves itself (Confirm, then
// Agent.TrialEnded, as torpor-agent's proof does) the live wake installs
// the offer and the agent restarts into it. Before, the install was
// refused ("install: slots: a slot is on trial"), the rollout counted the
// device refused and offered it nothing more.
func TestAnOfferWaitsForTheTrial(t *testing.T) {
	s, hand := trialSlots(t)
	build := bytes.Repeat([]byte{7}, 60_000)
	w, m := offerWorld(t, build, "2", hand)
	w.run()
	w.waitPhase(runtime.PhaseUpdate)
	st := w.awaitUpdate()
	if st.Outcome != "waiting" || st.Reason != "trial" || st.Target != "torpor-agent/2/linux-armv6" {
		t.Fatalf("the status's update while build 1 is on trial = %+v; want waiting, reason trial", st)
	}
	if r, err := m.Get(context.Background(), "r1"); err != nil || r.Results[w.key.DID().String()].Outcome != "" {
		t.Fatalf("the rollout while the device waits: %+v, %v; want it pending", r.Results, err)
	}

	if _, err := s.Confirm("a"); err != nil { // build 1 proves itself
		t.Fatal(err)
	}
	w.agent.TrialEnded()
	if err := <-w.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after the trial ended = %v; want ErrRestart into the offered build", err)
	}
	state, err := s.Load()
	if err != nil || state.Active != "a" || state.ActiveVersion != "1" || state.Trial == nil || state.Trial.Slot != "b" || state.Trial.Version != "2" {
		t.Fatalf("the slots after the trial ended: %+v, %v; want build 1 active in a, build 2 on trial in b", state, err)
	}
	if got, err := os.ReadFile(s.Path("b")); err != nil || !bytes.Equal(got, build) {
		t.Errorf("slot b holds %d bytes (%v), not the offered build", len(got), err)
	}
	if st := w.status().Update; st == nil || st.Outcome != wire.UpdateVerified || st.Bytes != 0 {
		t.Errorf("the status's update after the install = %+v; want verified, from the file kept (0 bytes fetched)", st)
	}
	if r, err := m.Get(context.Background(), "r1"); err != nil || r.Results[w.key.DID().String()].Outcome == rollout.Refused {
		t.Errorf("the rollout after the install: %+v, %v; want no refusal", r.Results, err)
	}
	w.newAgent() // the store was closed: a new agent opens it
}
