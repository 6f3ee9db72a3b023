//go:build integration

package mqttsec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/eclipse/paho.golang/paho"
)

// TestMosquittoAsDebianStartsIt: mosquitto started by root as Debian's
// unit starts it drops to the user mosquitto before it reads the password
// file; torporctl mqtt acl gives that file to the group mosquitto (0640),
// so the broker starts and a device logs in with its password. (Before,
// the file was 0600 to root and mosquitto did not start.)
func TestMosquittoAsDebianStartsIt(t *testing.T) {
	f := startMosquittoFleet(t, true)
	fi, err := os.Stat(filepath.Join(f.out, "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("passwd mode %v, want 0640", fi.Mode().Perm())
	}
	if _, err := f.connect(t, f.devA, "device-dev-a", nil); err != nil {
		t.Fatalf("device A with its password, mosquitto running as user mosquitto: %v", err)
	}
	if pid := f.m.Pid(); pid > 0 {
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err == nil && st.Uid == 0 {
			t.Errorf("mosquitto runs as root, want it to have dropped to the user mosquitto")
		}
	}
}

// TestMosquittoAttacker: device B, with its own valid password, tries what
// an attacker holding one device's credentials would. Each is refused:
// mosquitto's ACL drops its publishes to device A's topics (a retained
// status poisoned for every later reader) and every delivery its wildcard,
// $SYS and $share subscriptions would get; a packet above the embedded
// broker's limit ends its connection and is not stored, retained or not.
func TestMosquittoAttacker(t *testing.T) {
	f := startMosquittoFleet(t, false)
	got := make(chan *paho.Publish, 16)
	b, err := f.connect(t, f.devB, "device-dev-b", got)
	if err != nil {
		t.Fatal(err)
	}
	subs := []string{"#", "$SYS/#", "$share/g/torpor/v1/+/cmd", "torpor/v1/+/status", "torpor/v1/dev-a/#"}
	for _, topic := range subs {
		// mosquitto grants a subscription and filters each delivery by
		// the ACL, so the proof is what arrives below.
		b.Subscribe(ctxT(t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}})
	}
	poison := []byte(`{"poisoned":true}`)
	for _, topic := range []string{"torpor/v1/dev-a/status", "torpor/v1/dev-a/reply", "torpor/v1/dev-a/cmd", "torpor/v1/dev-a/sync"} {
		b.Publish(ctxT(t), &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: poison})
	}
	// The operator commands device A and device A publishes its status:
	// none of it may reach device B.
	op, err := f.connect(t, f.op, "operator", nil)
	if err != nil {
		t.Fatal(err)
	}
	op.Publish(ctxT(t), &paho.Publish{Topic: "torpor/v1/dev-a/cmd", QoS: 1, Payload: []byte("for A")})
	a, err := f.connect(t, f.devA, "device-dev-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Publish(ctxT(t), &paho.Publish{Topic: "torpor/v1/dev-a/status", QoS: 1, Retain: true, Payload: []byte("A's status")})
	// End the wait with a message B may get: on its own sync topic.
	b.Subscribe(ctxT(t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "torpor/v1/dev-b/sync", QoS: 1}}})
	b.Publish(ctxT(t), &paho.Publish{Topic: "torpor/v1/dev-b/sync", QoS: 1, Payload: []byte("end")})
	waitEnd(t, got)

	// A reader that comes later (the operator) finds A's genuine status
	// retained, not B's.
	if p := firstRetained(t, f, "torpor/v1/dev-a/status"); !bytes.Equal(p.Payload, []byte("A's status")) {
		t.Errorf("the retained status of device A is %q, want A's own", p.Payload)
	}
	checkOversized(t, f)
}

// waitEnd reads what device B received until its own "end" and fails on
// anything else.
func waitEnd(t *testing.T, got <-chan *paho.Publish) {
	t.Helper()
	for {
		select {
		case p := <-got:
			if p.Topic == "torpor/v1/dev-b/sync" && string(p.Payload) == "end" {
				return
			}
			t.Errorf("device B received %q on %s", p.Payload, p.Topic)
		case <-ctxT(t).Done():
			t.Fatal("device B never received its own sync message")
		}
	}
}

// checkOversized: device B publishes 1 MiB and 20 MiB retained statuses;
// mosquitto (max_packet_size) ends the connection and keeps neither.
func checkOversized(t *testing.T, f *mosquittoFleet) {
	t.Helper()
	for _, size := range []int{1 << 20, 20 << 20} {
		b, err := f.connect(t, f.devB, "device-dev-b", nil)
		if err != nil {
			t.Fatal(err)
		}
		// mosquitto closes the connection without a PUBACK: wait for
		// that, not for the acknowledgement.
		ctx, cancel := context.WithCancel(ctxT(t))
		acked := make(chan error, 1)
		go func() {
			_, err := b.Publish(ctx, &paho.Publish{Topic: "torpor/v1/dev-b/status", QoS: 1, Retain: true, Payload: bytes.Repeat([]byte("x"), size)})
			acked <- err
		}()
		select {
		case <-b.Done():
		case err := <-acked:
			if err == nil {
				t.Errorf("mosquitto acknowledged a %d-byte retained status", size)
			}
		case <-ctx.Done():
			t.Errorf("a %d-byte retained status: mosquitto neither refused it nor closed the connection", size)
		}
		cancel()
	}
	// One SUBSCRIBE for B's status, then A's: mosquitto sends the
	// retained messages in that order, so A's arriving first shows that
	// B has none.
	if p := firstRetained(t, f, "torpor/v1/dev-b/status", "torpor/v1/dev-a/status"); p.Topic != "torpor/v1/dev-a/status" {
		t.Errorf("mosquitto kept a %d-byte retained status of device B", len(p.Payload))
	}
}

// firstRetained subscribes the operator to topics in one SUBSCRIBE and
// returns the first retained message it gets.
func firstRetained(t *testing.T, f *mosquittoFleet, topics ...string) *paho.Publish {
	t.Helper()
	reader := make(chan *paho.Publish, 4)
	r, err := f.connect(t, f.op, "operator", reader)
	if err != nil {
		t.Fatal(err)
	}
	var subs []paho.SubscribeOptions
	for _, topic := range topics {
		subs = append(subs, paho.SubscribeOptions{Topic: topic, QoS: 1})
	}
	if _, err := r.Subscribe(ctxT(t), &paho.Subscribe{Subscriptions: subs}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-reader:
		return p
	case <-ctxT(t).Done():
		t.Fatalf("no retained message on %v", topics)
	}
	return nil
}
