package conformance

import (
	"testing"
)

// relayKinds are the kinds that run against the relay's stores.
var relayKinds = map[string]bool{"asleep-queue": true, "asleep-dequeue": true, "asleep-http-response": true, "reachability-verdict": true, "agent-card-build": true}

// TestAtomVectorsOnJetStream runs the atom vectors with the relay's stores
// on JetStream: every vector passes, none is skipped, and the relay-side
// kinds ran.
func TestAtomVectorsOnJetStream(t *testing.T) {
	before := jsOpened.Load()
	rep, err := RunWith(atomVectors, Options{Store: "jetstream"})
	if err != nil {
		t.Fatal(err)
	}
	relay := 0
	for _, o := range rep.Results {
		if relayKinds[o.Kind] {
			relay++
		}
		if o.Status != Pass {
			t.Errorf("%s %s (%s): expected=%s got=%s %s", o.Status, o.ID, o.Kind, o.Expected, o.Got, o.Note)
		}
	}
	if n := jsOpened.Load() - before; n < int64(relay) {
		t.Errorf("%d JetStream stores opened for %d relay-side vectors", n, relay)
	}
	if relay == 0 || rep.Failed != 0 || rep.Skipped != 0 {
		t.Errorf("%d passed, %d failed, %d skipped; %d of relay-side kinds", rep.Passed, rep.Failed, rep.Skipped, relay)
	}
	t.Logf("%d vectors passed on JetStream, %d of them relay-side", rep.Passed, relay)
}

func TestRunWithUnknownStore(t *testing.T) {
	if _, err := RunWith(atomVectors, Options{Store: "etcd"}); err == nil {
		t.Error("RunWith(store etcd) succeeded")
	}
}
