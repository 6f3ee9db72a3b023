//go:build integration

package hostile

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// startRelayAt runs torpor-relay whose clock reads about at now: its
// --time-scale 2 clock, from an epoch as far before now as at is after,
// reads epoch + (now − epoch) × 2 = at (and runs twice as fast, which no
// link step here notices).
func startRelayAt(t *testing.T, at time.Time) *relayProc {
	t.Helper()
	now := time.Now()
	epoch := now.Add(now.Sub(at))
	return startRelay(t, "--time-scale", "2", "--time-epoch", epoch.UTC().Format(time.RFC3339Nano))
}

// TestAgentRelayYear2100: a relay (or anyone answering for a
// plain-http relay's address) states the year 2100 to a device that
// already keeps a floor from its genuine relay. The device judges that
// wake by it (objects expire early, never late) but does not keep it as
// its floor, and says so in its log and wake line; back on its genuine
// relay it is trusted again and delivers a valid object. Before the fix
// the floor moved to 2100 and every record was held (no-trusted-time) or,
// with the kernel's clock synchronised, judged expired.
func TestAgentRelayYear2100(t *testing.T) {
	genuine := startRelay(t)
	hostile := startRelayAt(t, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	dev, sender := key(t, 60), key(t, 61)
	d := agNewDevice(t)
	d.key = testenv.KeyFile(t, dev)
	args := []string{"--config", d.config, "--key", d.key, "--data-dir", d.data, "--relay", genuine.URL, "--mode", "sleep",
		"--purposes", "comms:*", "--allow-plaintext", "--handler", "comms:*=exec:/bin/true"}
	agent := testenv.Start(t, agBinary(t), args...)
	agent.Wait(t, wakeRE, "trustedTime=") // a floor from the genuine relay (and NTP if synchronised)
	agent.Stop()

	args[7] = hostile.URL
	agent = testenv.Start(t, agBinary(t), args...)
	agent.Wait(t, regexp.MustCompile(`msg="trusted time: a source's time was not kept as the floor`), "held=\"relay: its time 2100-01-01T")
	agent.Wait(t, wakeRE, "trustedTimeHeld=")
	agent.Stop()

	obj := runtimetest.Object(t, sender, "comms:message", time.Now().Add(-time.Minute), time.Hour, nil)
	if a := send(t, genuine.URL, dev.DID().String(), sender, "1.0", string(runtimetest.Body(t, runtimetest.DataPart(t, obj)))); a.Status != http.StatusServiceUnavailable {
		t.Fatalf("send: %s, want 503 queued", a)
	}
	args[7] = genuine.URL
	agent = testenv.Start(t, agBinary(t), args...)
	m := agent.Wait(t, wakeRE, "trustedTime=")
	agent.Stop()
	if m[1] != "1" || m[2] != "1" || m[3] != "0" {
		t.Fatalf("back on the genuine relay the wake drained records=%s acked=%s deferred=%s, want 1 1 0", m[1], m[2], m[3])
	}
	agent.Wait(t, wakeRE, "accepted=1", "delivered=1")
	if left := queued(t, genuine.URL, dev); len(left) != 0 {
		t.Errorf("the genuine relay still holds %d records", len(left))
	}
}
