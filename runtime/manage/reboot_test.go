package manage_test

import (
	"context"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// reboot simulates a power cut and a boot: the client drops its connection
// without DISCONNECT, the bbolt file is closed and opened again (a new
// ledger incarnation), and a new client wakes with it.
func (h *harness) reboot() {
	h.t.Helper()
	h.client.Abort()
	if err := h.state.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.state = mqtttest.OpenState(h.t, h.path, h.clk)
	h.wake()
}

// replies collects replies to id until one has outcome want.
func (h *harness) replyWith(id string, want command.Outcome) []command.Reply {
	h.t.Helper()
	var all []command.Reply
	for {
		r := h.reply(id)
		all = append(all, r)
		if r.Outcome == want {
			return all
		}
	}
}

func TestWillMarksAnUnexpectedDisconnect(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.dev.State = envelope.Status{Mode: "hourly_wake", Window: &envelope.Window{Minute: 7, LengthSec: 300}}
	h.wake()
	st, obj, err := h.operator().Status(ctxT(t), h.name, h.devKey.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateAwake || st.Mode != "hourly_wake" || st.Window.Minute != 7 || obj.Issuer != h.devKey.DID() {
		t.Errorf("status when awake = %+v", st)
	}
	h.client.Abort()
	// A fresh operator reads the retained message: the will.
	h.op = nil
	st, _, err = h.operator().Status(ctxT(t), h.name, h.devKey.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateLost || st.NextWake != nil {
		t.Errorf("status after a power cut = %+v, want lost", st)
	}
}

func TestCrashMidCommandIsIndeterminate(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	started := make(chan struct{})
	h.dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		if c.Op == command.OpReboot {
			close(started)
			<-ctx.Done() // the power goes while the command runs
		}
		return manage.OK(nil)
	}
	h.wake()
	sent := h.send(command.OpReboot, &command.RebootArgs{})
	<-started
	h.reboot()

	// The broker delivers the unacknowledged command again; the device
	// does not run it again and says it may or may not have taken effect.
	r := h.reply(sent.Object.ID)
	if r.Outcome != command.OutcomeIndeterminate || !strings.Contains(r.Detail, manage.LedgerKey(h.opKey.DID(), sent.Object.ID)) {
		t.Errorf("reply after the restart = %+v, want indeterminate naming the ledger key", r)
	}
	if got := h.dev.Executed(); len(got) != 1 {
		t.Errorf("executed %d times, want once", len(got))
	}
	e, err := h.state.Ledger.Get(mustView(t, h), manage.LedgerKey(h.opKey.DID(), sent.Object.ID))
	if err != nil || e.State.String() != "indeterminate" {
		t.Errorf("ledger entry = %+v, %v", e, err)
	}
}

func TestQueuedReplySurvivesReboot(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	proxy := mqtttest.StartProxy(t, strings.TrimPrefix(h.broker.URL(), "mqtt://"))
	h.broker.(*mqtttest.Embedded).AddAudience(t, proxy.URL())
	h.deviceURL = proxy.URL()
	h.dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		proxy.Cut() // the network goes away before the reply is sent
		return manage.OK(map[string]string{"done": c.Op})
	}
	h.wake()
	// The device is awake, so no witness is needed (and the network goes
	// before one could see the command).
	h.lastSeq = command.NextSeq(h.lastSeq, h.clk.Now())
	sent, err := h.operator().Send(ctxT(t), h.name, command.Spec{Device: h.devKey.DID(), Seq: h.lastSeq, Op: command.OpDrain}, false)
	if err != nil {
		t.Fatal(err)
	}
	// The completion commits with the reply queued; then the power goes.
	if _, err := h.dev.WaitExecuted(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.client.WaitIdle(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !completed(t, h, sent.Object.ID) {
		t.Fatal("the command's ledger key is not completed")
	}
	h.client.Abort()
	h.state.Close()

	proxy.Restore()
	h.state = mqtttest.OpenState(t, h.path, h.clk)
	h.wake()
	replies := h.replyWith(sent.Object.ID, command.OutcomeOK)
	if r := replies[len(replies)-1]; string(r.Result) != `{"done":"drain"}` {
		t.Errorf("reply = %+v", r)
	}
	if got := h.dev.Executed(); len(got) != 1 {
		t.Errorf("executed %d times, want once", len(got))
	}
}

// completed reports whether the ledger completed the command's key.
func completed(t testing.TB, h *harness, id string) bool {
	var ok bool
	h.state.DB.View(func(tx *bolt.Tx) error {
		e, err := h.state.Ledger.Get(tx, manage.LedgerKey(h.opKey.DID(), id))
		ok = err == nil && e.State.String() == "completed"
		return nil
	})
	return ok
}

func mustView(t testing.TB, h *harness) *bolt.Tx {
	t.Helper()
	tx, err := h.state.DB.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}
