package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// flipRecord flips the last byte (inside the body) of agent's record seq
// in the bolt queue, as a bad sector does.
func flipRecord(t *testing.T, q *queue.Bolt, agent did.DID, seq uint64) {
	t.Helper()
	err := q.DB().Update(func(tx *bolt.Tx) error {
		recs := tx.Bucket([]byte("agents")).Bucket([]byte(agent.String())).Bucket([]byte("r"))
		k := binary.BigEndian.AppendUint64(nil, seq)
		v := bytes.Clone(recs.Get(k))
		v[len(v)-1] ^= 0x01
		return recs.Put(k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDamagedRecordWithheld: a queued record whose bytes changed on disk
// is not served to the device, is logged once at error level, counted in
// /metrics and listed to the operator as damaged; the sound records
// around it are served.
func TestDamagedRecordWithheld(t *testing.T) {
	op := didtest.Key(t, 7)
	h, logs := loggedOperatorHarness(t, op)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	for range 3 {
		if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 503 {
			t.Fatalf("enqueue: %d %s", r.status, r.body)
		}
	}
	flipRecord(t, h.q, dev.DID(), 2)
	c := h.device(t, dev, "sleep", deviceOpts{})
	for range 2 { // logged and counted once, however often it is read
		recs, _, err := c.Pull(context.Background(), 0, 10)
		if err != nil || len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 3 {
			t.Fatalf("Pull over a damaged record: %d records, %v; want seqs 1 and 3", len(recs), err)
		}
	}
	if n := strings.Count(logs.String(), "fail their checksum"); n != 1 {
		t.Errorf("%d error lines about the damaged record, want 1:\n%s", n, logs.String())
	}
	if m := string(h.get(t, "/metrics").body); !strings.Contains(m, "torpor_relay_queue_damaged_records_total 1\n") {
		t.Errorf("/metrics lacks torpor_relay_queue_damaged_records_total 1")
	}
	r := h.operatorReq(t, "GET", op, dev.DID(), "")
	var ans struct {
		Messages int
		Damaged  []uint64
	}
	if err := json.Unmarshal(r.body, &ans); err != nil || ans.Messages != 2 || len(ans.Damaged) != 1 || ans.Damaged[0] != 2 {
		t.Errorf("operator list: %d %s; want 2 messages and damaged [2]", r.status, r.body)
	}
	if r := h.operatorReq(t, "DELETE", op, dev.DID(), "?all=1"); r.status != 200 || !strings.Contains(string(r.body), `"purged":3`) {
		t.Errorf("purge all: %d %s; want the damaged record purged too (3)", r.status, r.body)
	}
}

// stuckAcks is a queue whose acknowledgements delete nothing, as a
// damaged bbolt page makes them: the records stay and are served again.
type stuckAcks struct{ *queue.Bolt }

func (stuckAcks) Ack(context.Context, string, []uint64) error { return nil }
func (stuckAcks) AckCount(context.Context, string, []uint64) (int, error) {
	return 0, nil
}

// TestAckDeletingNothingIsAnError: an acknowledgement of delivered
// records that the store does not delete, while it still serves them, is
// logged at error level, counted, and fails (the link closes), instead
// of the device receiving the same records again and again.
func TestAckDeletingNothingIsAnError(t *testing.T) {
	var logs runtimetest.Log // the relay writes it while the test reads it
	h := newHarness(t, func(c *Config) {
		c.Stores.Queue = stuckAcks{c.Stores.Queue.(*queue.Bolt)}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	_, c, recs := pulledOne(t, h)
	if err := c.Ack(context.Background(), []uint64{recs[0].Seq}); err == nil {
		t.Error("an acknowledgement that deleted nothing succeeded")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "deleted nothing") {
		t.Errorf("no error line about the acknowledgement:\n%s", logs.String())
	}
	if m := string(h.get(t, "/metrics").body); !strings.Contains(m, `torpor_relay_queue_acks_deleted_nothing_total{still_served="true"} 1`) {
		t.Errorf("/metrics lacks the acknowledgement that deleted nothing")
	}
}

// TestAckOfPurgedRecordsIsNoError: records an operator purged while the
// device held them are acknowledged without error (they are gone, as
// the acknowledgement asks), logged at WARN and counted as not served.
func TestAckOfPurgedRecordsIsNoError(t *testing.T) {
	op := didtest.Key(t, 7)
	h, logs := loggedOperatorHarness(t, op)
	dev, c, recs := pulledOne(t, h)
	if r := h.operatorReq(t, "DELETE", op, dev.DID(), "?all=1"); r.status != 200 {
		t.Fatalf("purge: %d %s", r.status, r.body)
	}
	if err := c.Ack(context.Background(), []uint64{recs[0].Seq}); err != nil {
		t.Errorf("acknowledging a purged record: %v, want no error", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "no longer held") {
		t.Errorf("no warning about the acknowledgement:\n%s", logs.String())
	}
	if m := string(h.get(t, "/metrics").body); !strings.Contains(m, `torpor_relay_queue_acks_deleted_nothing_total{still_served="false"} 1`) {
		t.Errorf("/metrics lacks the acknowledgement of records no longer held")
	}
}

// pulledOne queues one message for a sleeping device of h and links the
// device, which pulls it and does not acknowledge it yet.
func pulledOne(t *testing.T, h *harness) (*did.PrivateKey, *link.Client, []wire.Record) {
	t.Helper()
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 503 {
		t.Fatalf("enqueue: %d %s", r.status, r.body)
	}
	c := h.device(t, dev, "sleep", deviceOpts{})
	recs, _, err := c.Pull(context.Background(), 0, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Pull: %d records, %v", len(recs), err)
	}
	return dev, c, recs
}
