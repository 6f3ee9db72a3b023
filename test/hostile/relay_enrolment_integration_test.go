//go:build integration

package hostile

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

var (
	enrolledRE       = regexp.MustCompile(`msg="agent admitted by its owner's enrolment" .*agent=(\S+) owner=(\S+)`)
	enrolmentRefused = regexp.MustCompile(`msg="enrolment refused; the device stays on probation until an operator admits it" .*agent=(\S+) err="([^"]*)"`)
)

// enrolmentConfig writes an agent configuration that presents the
// enrolment of dev that signer made with torporctl enrol.
func enrolmentConfig(t *testing.T, signer, dev *did.PrivateKey) string {
	t.Helper()
	out, stderr, err := ctl(t, "enrol", "--key", testenv.KeyFile(t, signer), "--name", "field-7", dev.DID().String())
	if err != nil {
		t.Fatalf("torporctl enrol: %v\n%s", err, stderr)
	}
	dir := t.TempDir()
	enrolment := filepath.Join(dir, "enrolment.json")
	if err := os.WriteFile(enrolment, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(cfg, []byte(`{"version": 1, "enrolment": "`+enrolment+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sixFromOne sends six messages from one sender to agent and returns the
// status of the sixth: probation lets a sender queue 5.
func sixFromOne(t *testing.T, url string, agent did.DID) int {
	t.Helper()
	sender := freshKey(t)
	var a answer
	for i := range 6 {
		a = send(t, url, agent.String(), sender, "1.0", message(`"m-`+strconv.Itoa(i)+`"`, wirePart("hello")))
	}
	return a.Status
}

// TestOwnerEnrolmentAdmitsAtOnce: the real agent presenting its owner's
// enrolment (torporctl enrol; "enrolment" in its configuration) is
// admitted at once by a relay started with --owner, without an operator:
// a sender may queue more than probation's five messages. An enrolment
// signed by a key the relay does not trust leaves the device on
// probation, and the relay's log says why.
func TestOwnerEnrolmentAdmitsAtOnce(t *testing.T) {
	owner, dev := freshKey(t), freshKey(t)
	r := startRelay(t, "--owner", owner.DID().String())
	a := startAgent(t, r, dev, "sleep", "--config", enrolmentConfig(t, owner, dev))
	if m := r.Wait(t, enrolledRE, dev.DID().String()); m[2] != owner.DID().String() {
		t.Errorf("admitted by %s, want the owner %s", m[2], owner.DID())
	}
	a.Stop()
	// Its next link (the agent's next wake) gets the relay's ceiling, and
	// its senders the relay's bounds.
	if c, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep"}); err != nil || c.Hello().MaxPerPeer <= 5 {
		t.Fatalf("the enrolled device's next link: %v, want the relay's ceiling (more than probation's 5 per sender)", err)
	}
	if st := sixFromOne(t, r.URL, dev.DID()); st != http.StatusServiceUnavailable {
		t.Errorf("a sixth message from one sender to the enrolled device: %d, want 503 queued (admitted)", st)
	}

	forger, victim := freshKey(t), freshKey(t)
	v := startAgent(t, r, victim, "sleep", "--config", enrolmentConfig(t, forger, victim))
	if m := r.Wait(t, enrolmentRefused, victim.DID().String()); !regexp.MustCompile(`not an owner this relay trusts`).MatchString(m[2]) {
		t.Errorf("the refusal says %q, want the untrusted owner named", m[2])
	}
	v.Stop()
	if c, err := publishState(t, r.URL, victim, wire.State{Mode: "sleep"}); err != nil || c.Hello().MaxPerPeer != 5 {
		t.Fatalf("a device with a forged enrolment links again: %v, want probation's ceiling (5 per sender)", err)
	}
	if st := sixFromOne(t, r.URL, victim.DID()); st != http.StatusTooManyRequests {
		t.Errorf("a sixth message from one sender to a device with a forged enrolment: %d, want 429 (on probation)", st)
	}
}
