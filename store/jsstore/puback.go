package jsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publishAt stores m on its subject of the stream stream if the
// subject's last stream sequence is last, as one request: the headers
// Nats-Expected-Stream and Nats-Expected-Last-Subject-Sequence
// (https://docs.nats.io/nats-concepts/jetstream/headers), and the
// server's publish acknowledgement decoded by decodePubAck. It is what
// jetstream.PublishMsg with WithExpectStream and
// WithExpectLastSequencePerSubject does, without its options' allocations
// and its encoding/json decode of every acknowledgement; a ctx without a
// deadline gets the JetStream context's default timeout, as there. "No
// responders" is returned as nats.ErrNoResponders, not retried here:
// Conn.retry retries it.
func (c *Conn) publishAt(ctx context.Context, m *nats.Msg, stream string, last uint64) (seq uint64, dup bool, err error) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header[jetstream.ExpectedStreamHeader] = []string{stream}
	m.Header[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(last, 10)}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.js.Options().DefaultTimeout)
		defer cancel()
	}
	resp, err := c.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return 0, false, err
	}
	return decodePubAck(resp.Data, stream)
}

// decodePubAck reads a JetStream publish acknowledgement from stream
// (the JSON object io.nats.jetstream.api.v1.pub_ack_response:
// https://github.com/nats-io/jsm.go/blob/main/schemas/jetstream/api/v1/pub_ack_response.json).
// The common answer, a message stored, is written by nats-server as
// {"stream":NAME,"seq":N} (server/stream.go, the stream's pubAck
// template) and read here without encoding/json; any other (an error, a
// duplicate, a domain, a field added by a later server) is decoded whole.
// An error answer is returned as *jetstream.APIError, wrapped as
// jetstream.PublishMsg wraps it.
func decodePubAck(data []byte, stream string) (seq uint64, dup bool, err error) {
	if rest, ok := bytes.CutPrefix(data, []byte(`{"stream":"`)); ok {
		if rest, ok = bytes.CutPrefix(rest, []byte(stream)); ok {
			if rest, ok = bytes.CutPrefix(rest, []byte(`","seq":`)); ok {
				if digits, ok := bytes.CutSuffix(rest, []byte("}")); ok {
					if n, err := strconv.ParseUint(string(digits), 10, 64); err == nil && n > 0 {
						return n, false, nil
					}
				}
			}
		}
	}
	var a struct {
		Error     *jetstream.APIError `json:"error"`
		Stream    string              `json:"stream"`
		Seq       uint64              `json:"seq"`
		Duplicate bool                `json:"duplicate"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return 0, false, jetstream.ErrInvalidJSAck
	}
	if a.Error != nil {
		return 0, false, fmt.Errorf("nats: %w", a.Error)
	}
	if a.Stream == "" {
		return 0, false, jetstream.ErrInvalidJSAck
	}
	return a.Seq, a.Duplicate, nil
}
