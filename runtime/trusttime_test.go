package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/wake"
)

// unsynced is a kernel with no NTP sync and no RTC (a Raspberry Pi 1–4
// just after boot).
type unsynced struct{}

func (unsynced) NTP() (trusted.NTPState, error) { return trusted.NTPState{}, nil }
func (unsynced) RTC(string) (time.Time, error)  { return time.Time{}, errors.New("no RTC") }
func (unsynced) Boot() (trusted.Boot, error) {
	return trusted.Boot{ID: "boot", Since: time.Minute}, nil
}

// queueObject queues the Governed Object obj from sender for w's agent at
// the relay's time t0, straight into the relay's store.
func (w *world) queueObject(t *testing.T, sender *did.PrivateKey, obj []byte) {
	t.Helper()
	rec := queue.Record{Agent: w.key.DID().String(), From: sender.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, obj))}
	if _, err := w.queue.Enqueue(context.Background(), rec, queuebounds.Default(), t0); err != nil {
		t.Fatal(err)
	}
}

// TestBootWithTheClockAnHourBack: the device boots with its clock an
// hour behind the relay's (fake-hwclock's time after a power-off). It
// links anyway, takes the relay's time from the handshake, reports it,
// and its drain refuses as expired the object that expired 30 minutes
// ago, which its own clock would still accept, and delivers the valid one.
func TestBootWithTheClockAnHourBack(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Clock = clocktest.New(t0.Add(-time.Hour))
	w.cfg.TrustedTime = &trusted.Config{Kernel: unsynced{}}
	w.newAgent()
	alice := runtimetest.Key(t, 1)
	expired := runtimetest.Object(t, alice, "comms:message", t0.Add(-2*time.Hour), 90*time.Minute, nil)
	valid := runtimetest.Object(t, alice, "comms:message", t0.Add(-10*time.Minute), time.Hour, nil)
	w.queueObject(t, alice, expired)
	w.queueObject(t, alice, valid)
	w.run()
	boot := w.nextWake()
	w.shutdown()
	if boot.Time == nil || boot.Time.Source != string(trusted.Relay) || boot.Time.Forward != time.Hour {
		t.Fatalf("boot wake's time %+v, want the relay's, an hour forward", boot.Time)
	}
	if got := w.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, valid) {
		t.Errorf("delivered %v, want only the valid object %s", got, runtimetest.ObjectID(t, valid))
	}
	if boot.Drain.Rejected["expired"] != 1 || boot.Drain.Acked != 2 {
		t.Errorf("drain %v, want the expired object rejected and both records acknowledged", boot.Drain)
	}
}

// ntpKernel is a kernel whose NTP sync a test switches.
type ntpKernel struct {
	unsynced
	synced bool
}

func (k *ntpKernel) NTP() (trusted.NTPState, error) { return trusted.NTPState{Synced: k.synced}, nil }

// loseTrustedTime runs w's agent once on an NTP-synced kernel with its
// clock at t0+3h, until booted returns (booted checks that the boot
// reached the point it wants), so that the agent commits that time as
// its floor, and shuts it down; then it makes a new agent, not yet run,
// whose kernel lost its NTP sync and whose clock is at t0-1h: below the
// floor, with no source of trusted time.
func (w *world) loseTrustedTime(booted func()) {
	k := &ntpKernel{synced: true}
	w.cfg.Clock = clocktest.New(t0.Add(3 * time.Hour))
	w.cfg.TrustedTime = &trusted.Config{Kernel: k}
	w.newAgent()
	w.run()
	booted()
	w.shutdown()

	k.synced = false
	w.cfg.Clock = clocktest.New(t0.Add(-time.Hour))
	w.newAgent()
}

// TestNoTrustedTimeHoldsTheQueue: a relay whose time is before the floor
// the agent committed (three hours of NTP-synced time it has already
// seen) is not trusted; with no other source the drain holds the record:
// nothing judged, nothing acknowledged, and the wake report says why.
func TestNoTrustedTimeHoldsTheQueue(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.loseTrustedTime(func() {
		if r := w.nextWake(); r.Time == nil || r.Time.Source != string(trusted.NTP) {
			t.Fatalf("first boot's time %+v, want ntp", r.Time)
		}
	})
	alice := runtimetest.Key(t, 1)
	valid := runtimetest.Object(t, alice, "comms:message", t0.Add(-10*time.Minute), time.Hour, nil)
	w.queueObject(t, alice, valid)
	w.run()
	r := w.nextWake()
	w.shutdown()
	if r.Time == nil || r.Time.Source != "" || !strings.Contains(r.Time.Untrusted, "before the floor") {
		t.Fatalf("second boot's time %+v, want untrusted: the relay's time is before the floor", r.Time)
	}
	if r.Drain.Deferred != 1 || r.Drain.Acked != 0 || r.Drain.Objects != 0 || len(w.rec.IDs()) != 0 {
		t.Errorf("drain %v, delivered %v: want the record held, nothing judged", r.Drain, w.rec.IDs())
	}
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), t0); st.Messages != 1 {
		t.Errorf("the relay holds %d records, want the held one", st.Messages)
	}
}

// TestLiveRequestWithoutTrustedTime: a live request that arrives while
// the agent has no trusted time is not judged: the sender gets 503 and
// nothing is delivered.
func TestLiveRequestWithoutTrustedTime(t *testing.T) {
	w := newWorld(t, wake.AlwaysOn)
	w.loseTrustedTime(func() { w.waitPhase(runtime.PhasePublish) })
	w.run()
	w.waitPhase(runtime.PhasePublish)
	alice := runtimetest.Key(t, 1)
	status, body := w.sendLive(alice, runtimetest.Object(t, alice, "comms:message", t0, time.Hour, nil))
	if status != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("no trusted time")) {
		t.Errorf("live request without trusted time: %d %s; want 503 saying why", status, body)
	}
	if got := w.rec.IDs(); len(got) != 0 {
		t.Errorf("delivered %v without trusted time", got)
	}
	w.shutdown()
}

// TestRelayYear2100NotKept: a relay states the year 2100. The
// wake judges by it (objects expire early, never late) but keeps none of
// it as the floor, and its report says so; back on the genuine relay the
// next wake is trusted and delivers a valid object.
func TestRelayYear2100NotKept(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Clock = clocktest.New(t0)
	w.cfg.TrustedTime = &trusted.Config{Kernel: unsynced{}}
	w.newAgent()
	w.run()
	if r := w.nextWake(); r.Time == nil || r.Time.Source != string(trusted.Relay) || r.Time.Held != "" {
		t.Fatalf("first wake's time %+v, want the relay's", r.Time)
	}
	w.shutdown()

	w.clock.Set(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)) // the relay's clock
	w.newAgent()
	w.run()
	r := w.nextWake()
	w.shutdown()
	if r.Time == nil || !strings.Contains(r.Time.Held, "relay: its time 2100-01-01T00:00:00Z is beyond what the device can bound") {
		t.Fatalf("the 2100 wake's time %+v, want the relay's time held", r.Time)
	}

	w.clock.Set(t0)
	w.newAgent()
	alice := runtimetest.Key(t, 1)
	valid := runtimetest.Object(t, alice, "comms:message", t0.Add(-10*time.Minute), time.Hour, nil)
	w.queueObject(t, alice, valid)
	w.run()
	r = w.nextWake()
	w.shutdown()
	if r.Time == nil || r.Time.Source != string(trusted.Relay) {
		t.Fatalf("back on the genuine relay: time %+v, want the relay's", r.Time)
	}
	if got := w.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, valid) {
		t.Errorf("delivered %v, want the valid object %s", got, runtimetest.ObjectID(t, valid))
	}
}
