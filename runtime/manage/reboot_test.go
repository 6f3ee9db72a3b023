package manage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

func TestWillMarksAnUnexpectedDisconnect(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.Dev.State = envelope.Status{Mode: "hourly_wake", Window: &envelope.Window{Minute: 7, LengthSec: 300}}
	h.Wake()
	st, obj, err := h.Operator().Status(ctxT(t), h.Name, h.Key.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateAwake || st.Mode != "hourly_wake" || st.Window.Minute != 7 || obj.Issuer != h.Key.DID() {
		t.Errorf("status when awake = %+v", st)
	}
	_, statuses, err := h.Operator().Events(h.Name)
	if err != nil {
		t.Fatal(err)
	}
	h.Server.Abort()
	// The broker publishes the will once it finds the connection gone,
	// which it does on its own time: the watching operator receives it
	// then, and a fresh operator reads it retained after that.
	awaitState(t, statuses, h.Key.DID(), h.Clock.Now(), envelope.StateLost)
	st, _, err = h.ReconnectOperator().Status(ctxT(t), h.Name, h.Key.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateLost || st.NextWake != nil {
		t.Errorf("status after a power cut = %+v, want lost", st)
	}
}

// awaitState waits for a status of state, signed by dev and valid at now,
// on statuses (an operator's, command.Operator.Events), skipping the
// statuses before it.
func awaitState(t *testing.T, statuses <-chan command.Message, dev did.DID, now time.Time, state envelope.State) {
	t.Helper()
	ctx := ctxT(t)
	for {
		select {
		case m := <-statuses:
			if st, _, err := envelope.VerifyStatus(m.ContentType, m.Payload, dev, now); err == nil && st.State == state {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s status from %s: %v", state, dev, ctx.Err())
		}
	}
}

func TestCrashMidCommandIsIndeterminate(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	started := make(chan struct{})
	h.Dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		if c.Op == command.OpReboot {
			close(started)
			<-ctx.Done() // the power goes while the command runs
		}
		return manage.OK(nil)
	}
	h.Wake()
	sent := h.Send(command.OpReboot, &command.RebootArgs{})
	<-started
	h.Reboot()

	// The broker delivers the unacknowledged command again; the device
	// does not run it again and says it may or may not have taken effect.
	r := h.Reply(sent.Object.ID)
	if r.Outcome != command.OutcomeIndeterminate || !strings.Contains(r.Detail, manage.LedgerKey(h.OpKey.DID(), sent.Object.ID)) {
		t.Errorf("reply after the restart = %+v, want indeterminate naming the ledger key", r)
	}
	if got := h.Dev.Executed(); len(got) != 1 {
		t.Errorf("executed %d times, want once", len(got))
	}
	e, err := h.State.Ledger.Get(mustView(t, h), manage.LedgerKey(h.OpKey.DID(), sent.Object.ID))
	if err != nil || e.State.String() != "indeterminate" {
		t.Errorf("ledger entry = %+v, %v", e, err)
	}
}

func TestQueuedReplySurvivesReboot(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	proxy := mqtttest.StartProxy(t, strings.TrimPrefix(h.Broker.URL(), "mqtt://"))
	h.Broker.(*mqtttest.Embedded).AddAudience(t, proxy.URL())
	h.DeviceURL = proxy.URL()
	h.Dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		proxy.Cut() // the network goes away before the reply is sent
		return manage.OK(map[string]string{"done": c.Op})
	}
	h.Wake()
	// The device is awake, so no witness is needed (and the network goes
	// before one could see the command).
	h.Seq = command.NextSeq(h.Seq, h.Clock.Now())
	sent, err := h.Operator().Send(ctxT(t), h.Name, command.Spec{Device: h.Key.DID(), Seq: h.Seq, Op: command.OpDrain}, false)
	if err != nil {
		t.Fatal(err)
	}
	// The completion commits with the reply queued; then the power goes.
	if _, err := h.Dev.WaitExecuted(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.Server.WaitIdle(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !completed(t, h, sent.Object.ID) {
		t.Fatal("the command's ledger key is not completed")
	}
	h.Server.Abort()
	h.State.Close()

	proxy.Restore()
	h.State = mqtttest.OpenState(t, h.Path, h.Clock)
	h.Wake()
	replies := h.ReplyWith(sent.Object.ID, command.OutcomeOK)
	if r := replies[len(replies)-1]; string(r.Result) != `{"done":"drain"}` {
		t.Errorf("reply = %+v", r)
	}
	if got := h.Dev.Executed(); len(got) != 1 {
		t.Errorf("executed %d times, want once", len(got))
	}
}

// completed reports whether the ledger completed the command's key.
func completed(t testing.TB, h *harness, id string) bool {
	var ok bool
	h.State.DB.View(func(tx *bolt.Tx) error {
		e, err := h.State.Ledger.Get(tx, manage.LedgerKey(h.OpKey.DID(), id))
		ok = err == nil && e.State.String() == "completed"
		return nil
	})
	return ok
}

func mustView(t testing.TB, h *harness) *bolt.Tx {
	t.Helper()
	tx, err := h.State.DB.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}
