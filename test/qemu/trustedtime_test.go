//go:build integration

package qemu

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/test/procs"
)

// checkRelayTime checks that a wake judged expiry by the relay's time,
// which moved the guest's clock an hour forward.
func checkRelayTime(t *testing.T, name string, w procs.Line) {
	t.Helper()
	if w.Get("trustedTime") != "relay" {
		t.Errorf("%s wake: trusted time %q (%s), want relay", name, w.Get("trustedTime"), w.Get("trustedTimeWhy"))
		return
	}
	if fwd := duration(t, w, "trustedTimeForward"); fwd < time.Hour-3*time.Second || fwd > time.Hour+3*time.Second {
		t.Errorf("%s wake: the relay's time moved the clock %v forward, want the hour the guest is behind", name, fwd)
	}
}

// TestTrustedTimeAfterPoweroffWake: the guest boots as a Raspberry Pi
// 1–4 does after a poweroff-gpio sleep: its system clock an hour behind
// (fake-hwclock's saved time; /init steps it back an hour before the
// agent starts), no NTP sync, and an RTC (the PL031, on the host's time)
// that the system clock was not set from. The agent's link token is
// refused as expired, issued again at the relay's time, and the handshake
// gives the relay's time. While it sleeps a sender queues an object that
// expired 30 minutes ago (valid by the guest's clock) and a valid one. At
// the window the drain, judging by the relay's time, refuses the first as
// expired and hands over the second.
func TestTrustedTimeAfterPoweroffWake(t *testing.T) {
	const lead, length = 40 * time.Second, 10 * time.Second
	a := agentBoot{Methods: []string{"timer"}, Lead: lead, WindowLength: length, ClockStep: -time.Hour}.run(t)
	key, r, snd, sndKey, c := a.key, a.relay, a.snd, a.sndKey, a.console

	boot := c.wake()
	t.Logf("boot wake: %s", boot.Raw)
	checkRelayTime(t, "boot", boot)
	now := time.Now()
	expired := signLetter(t, sndKey, "comms:message", "expired 30 minutes ago", now.Add(-2*time.Hour), 90*time.Minute)
	valid := signLetter(t, sndKey, "comms:message", "valid for an hour", now, time.Hour)
	valid.deliver = true
	sendAll(t, snd, r, key.DID(), []letter{expired, valid})
	a.checkLead(lead)
	from := c.next
	w := c.wake()
	got := c.delivered(from)
	t.Logf("window wake: %s", w.Raw)
	checkRelayTime(t, "window", w)
	counts := drainCounts(w.First("drain"))
	want := map[string]int{"records": 3, "acked": 3, "deferred": 0, "handshake": 1, "objects": 2, "accepted": 1, "delivered": 1, "expired": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("drain %s = %d, want %d (report %q)", k, counts[k], n, w.First("drain"))
		}
	}
	wantGot := []sinkLine{{ObjectID: valid.id, Issuer: sndKey.DID().String(), Purpose: valid.purpose, Text: valid.text}}
	if diff := cmp.Diff(wantGot, got); diff != "" {
		t.Errorf("objects the agent's handler received (-want +got):\n%s", diff)
	}
	checkQueueEmpty(t, r, key.DID())
}
