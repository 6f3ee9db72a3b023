//go:build integration

package rollout

import (
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

const target, version = "torpor-agent/linux-armv6/1.4.0", "1.4.0"

// start starts rollout r1 of version over every device of the relay at
// url: one wave, paused when 2 of 3 executed failed (50 %).
func (f *fleet) start(t *testing.T, url string) {
	t.Helper()
	out := f.ctl(t, url, 0, "start", "r1", "--target", target, "--version", version, "--waves", "100",
		"--failure-types", "rolled-back", "--min-executed", "3", "--threshold", "50")
	if !strings.Contains(out, "4 devices: 0 installed, 0 rolled back, 0 refused, 4 pending") {
		t.Fatalf("start:\n%s", out)
	}
}

// TestRolloutPausesResumesAbortsAcrossRestart: on a relay binary with its
// bbolt files, torporctl starts a rollout of 4 devices; 3 wake, are
// offered the target and report installed, rolled back, rolled back; the
// relay pauses the rollout on the 66.7 % failure rate while the 4th, not
// yet woken, is pending; the state survives a restart of the relay;
// resumed, the 4th is offered the target; aborted, it is not.
func TestRolloutPausesResumesAbortsAcrossRestart(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	r := relaytest.Start(t, dir, f.relayFlags()...)
	for _, d := range f.devs {
		relaytest.Publish(t, r.URL, d, "hourly_wake")
	}
	f.start(t, r.URL)
	for i, o := range []string{"installed", "rolled-back", "rolled-back"} {
		if offer := wake(t, r.URL, f.devs[i], "", ""); offer == nil || offer.Target != target || offer.Version != version || offer.Rollout != "r1" {
			t.Fatalf("device %d's state-ok offered %+v", i, offer)
		}
		wake(t, r.URL, f.devs[i], o, version)
	}
	got := f.status(t, r.URL, "r1")
	if got.State != "paused" || !strings.Contains(got.Reason, "66.7 %") || got.Counts.Installed != 1 || got.Counts.RolledBack != 2 || got.Counts.Pending != 1 {
		t.Fatalf("after 2 of 3 rolled back: %+v", got)
	}
	if offer := wake(t, r.URL, f.devs[3], "", ""); offer != nil {
		t.Errorf("a paused rollout offered %+v", offer)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("stopping the relay: %v", err)
	}
	r = relaytest.Start(t, dir, f.relayFlags()...)
	if again := f.status(t, r.URL, "r1"); again.State != "paused" || again.Counts != got.Counts || len(again.Failures) != 2 {
		t.Fatalf("after a restart: %+v, want %+v", again, got)
	}
	if out := f.ctl(t, r.URL, 0, "resume", "r1"); !strings.Contains(out, "running") {
		t.Fatalf("resume:\n%s", out)
	}
	if offer := wake(t, r.URL, f.devs[3], "", ""); offer == nil || offer.Version != version {
		t.Fatalf("resumed: the 4th device was offered %+v", offer)
	}
	if out := f.ctl(t, r.URL, 0, "--reason", "bad build", "abort", "r1"); !strings.Contains(out, "aborted (bad build)") {
		t.Fatalf("abort:\n%s", out)
	}
	if offer := wake(t, r.URL, f.devs[3], "", ""); offer != nil {
		t.Errorf("an aborted rollout offered %+v", offer)
	}
	f.ctl(t, r.URL, 1, "resume", "r1")
}

// TestRolloutSharedOnJetStream: two relay binaries on one NATS JetStream
// server share a rollout: started through the first, offered and reported
// through both, paused through the second, and the first stops offering.
func TestRolloutSharedOnJetStream(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	f := newFleet(t)
	js := []string{"--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL()}
	a := relaytest.Start(t, t.TempDir(), f.relayFlags(js...)...)
	b := relaytest.Start(t, t.TempDir(), f.relayFlags(js...)...)
	for _, d := range f.devs {
		relaytest.Publish(t, a.URL, d, "hourly_wake")
	}
	f.start(t, a.URL)
	for i, r := range []*relaytest.Relay{a, b} {
		if offer := wake(t, r.URL, f.devs[i], "", ""); offer == nil || offer.Version != version {
			t.Fatalf("relay %d offered device %d %+v", i, i, offer)
		}
		wake(t, r.URL, f.devs[i], "installed", version)
	}
	if got := f.status(t, b.URL, "r1"); got.Counts.Installed != 2 || got.Counts.Pending != 2 {
		t.Fatalf("through the second relay: %+v", got.Counts)
	}
	f.ctl(t, b.URL, 0, "--reason", "hold on", "pause", "r1")
	if offer := wake(t, a.URL, f.devs[2], "", ""); offer != nil {
		t.Errorf("the first relay offered %+v after the second paused the rollout", offer)
	}
	if got := f.status(t, a.URL, "r1"); got.State != "paused" || got.Reason != "hold on" {
		t.Errorf("through the first relay: %s %q", got.State, got.Reason)
	}
}
