package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// TestDecodePubAck reads each kind of publish acknowledgement: the stored
// message's (read without encoding/json), a duplicate's, one with a
// domain, one of another stream, a refusal, and answers that are none.
func TestDecodePubAck(t *testing.T) {
	for _, c := range []struct {
		ack      string
		seq      uint64
		dup      bool
		conflict bool
		invalid  bool
	}{
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","seq":42}`, seq: 42},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","seq":18446744073709551615}`, seq: 18446744073709551615},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","seq":7,"duplicate": true}`, seq: 7, dup: true},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","domain":"hub","seq":9}`, seq: 9},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS_2","seq":5}`, seq: 5},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","seq":12,"batch":"b","count":1}`, seq: 12},
		{ack: `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"TORPOR_QUEUE_RECORDS","seq":0}`, conflict: true},
		{ack: `{"stream":"TORPOR_QUEUE_RECORDS","seq":1x}`, invalid: true},
		{ack: `{"seq":3}`, invalid: true},
		{ack: ``, invalid: true},
	} {
		seq, dup, err := decodePubAck([]byte(c.ack), "TORPOR_QUEUE_RECORDS")
		switch {
		case c.conflict:
			if !isConflict(err) || !refusedForCertain(err) {
				t.Errorf("%s: err %v, want a certain conflict (*jetstream.APIError)", c.ack, err)
			}
		case c.invalid:
			if !errors.Is(err, jetstream.ErrInvalidJSAck) {
				t.Errorf("%s: err %v, want ErrInvalidJSAck", c.ack, err)
			}
		case err != nil || seq != c.seq || dup != c.dup:
			t.Errorf("%s: seq %d dup %v err %v, want seq %d dup %v", c.ack, seq, dup, err, c.seq, c.dup)
		}
	}
}

// TestPubAckTemplate checks that the nats-server this module is built
// with answers a stored publish in the form decodePubAck reads without
// encoding/json, and that publishAt gets the message's sequence, a
// conflict for a wrong expected sequence and, for a message id stored
// already, the first write's sequence as a duplicate.
func TestPubAckTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, _ := twoQueues(t, ctx)
	c, stream, subj := q.c, q.c.n.records, q.c.n.recordsSubj+"ack"
	resp, err := c.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subj, Data: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"stream":"` + stream + `","seq":1}`; string(resp.Data) != want {
		t.Fatalf("the server answered %s, want %s", resp.Data, want)
	}
	m := &nats.Msg{Subject: subj, Data: []byte("b"), Header: nats.Header{jetstream.MsgIDHeader: {"op-b"}}}
	if seq, dup, err := c.publishAt(ctx, m, stream, 1); err != nil || seq != 2 || dup {
		t.Fatalf("publishAt after 1: seq %d dup %v err %v, want 2", seq, dup, err)
	}
	if _, _, err := c.publishAt(ctx, &nats.Msg{Subject: subj, Data: []byte("c")}, stream, 1); !isConflict(err) {
		t.Fatalf("publishAt after 1 again: err %v, want a conflict", err)
	}
	if seq, dup, err := c.publishAt(ctx, m, stream, 2); err != nil || seq != 2 || !dup {
		t.Fatalf("publishAt of op-b again, after 2: seq %d dup %v err %v, want the duplicate of 2", seq, dup, err)
	}
}

// BenchmarkDecodePubAck reads a stored message's acknowledgement as
// decodePubAck does and as jetstream.PublishMsg does (encoding/json into
// its pubAckResponse's shape), side by side.
func BenchmarkDecodePubAck(b *testing.B) {
	ack := []byte(`{"stream":"TORPOR_QUEUE_RECORDS","seq":1234567}`)
	for _, way := range []string{"decodePubAck", "encoding-json"} {
		b.Run(way, func(b *testing.B) {
			meter := benchcpu.Start(b)
			for b.Loop() {
				if way == "decodePubAck" {
					if _, _, err := decodePubAck(ack, "TORPOR_QUEUE_RECORDS"); err != nil {
						b.Fatal(err)
					}
					continue
				}
				var a struct {
					*jetstream.PubAck
					Error *jetstream.APIError `json:"error"`
				}
				if err := json.Unmarshal(ack, &a); err != nil || a.PubAck == nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}
