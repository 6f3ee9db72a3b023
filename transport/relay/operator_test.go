package relay

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
)

// operatorReq makes an operator request as k (nil: no token).
func (h *harness) operatorReq(tb testing.TB, method string, k *did.PrivateKey, agent did.DID, query string) resp {
	tb.Helper()
	return h.asOperator(tb, method, "/operator/queue/"+agent.String()+query, k, nil)
}

// loggedOperatorHarness is a relay whose operator is op and whose log
// (text) the test reads as the relay writes it.
func loggedOperatorHarness(t *testing.T, op *did.PrivateKey) (*harness, *runtimetest.Log) {
	t.Helper()
	logs := new(runtimetest.Log)
	h := newHarness(t, func(c *Config) {
		c.Access.Operators = []did.DID{op.DID()}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	return h, logs
}

// TestOperatorQueue: an operator lists a device's queue and purges one
// sender's records, then all; the purge is logged with who, what and how
// many; a sender, a stranger and a request naming nothing are refused,
// and nothing is removed by a refused request.
func TestOperatorQueue(t *testing.T) {
	op := didtest.Key(t, 7)
	h, logs := loggedOperatorHarness(t, op)
	dev, alice, mallory := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	for _, k := range []*did.PrivateKey{alice, mallory, mallory, alice} {
		if r := h.post(t, dev.DID(), k, "1.0", sendV1); r.status != 503 {
			t.Fatalf("enqueue: %d %s", r.status, r.body)
		}
	}
	refused := []struct {
		name   string
		method string
		k      *did.PrivateKey
		query  string
		status int
		want   string
	}{
		{"no token", "GET", nil, "", 401, "unauthorized"},
		{"a sender", "DELETE", alice, "?all=1", 403, "not_operator"},
		{"no selection", "DELETE", op, "", 400, "bad_selection"},
		{"both selections", "DELETE", op, "?all=1&sender=" + mallory.DID().String(), 400, "bad_selection"},
		{"bad sender", "DELETE", op, "?sender=did:key:nope", 400, "bad_sender"},
	}
	for _, tt := range refused {
		if r := h.operatorReq(t, tt.method, tt.k, dev.DID(), tt.query); r.status != tt.status || r.json["error"] != tt.want {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.want)
		}
	}
	if n := len(h.queued(t, dev.DID())); n != 4 {
		t.Fatalf("%d records after refused requests, want 4", n)
	}
	r := h.operatorReq(t, "GET", op, dev.DID(), "?sender="+mallory.DID().String())
	if r.status != 200 || r.json["messages"] != float64(2) || r.json["bytes"] != float64(2*len(sendV1)) || strings.Contains(string(r.body), "SendMessage") {
		t.Errorf("list mallory: %d %s, want 2 records without their bodies", r.status, r.body)
	}
	r = h.operatorReq(t, "DELETE", op, dev.DID(), "?sender="+mallory.DID().String())
	if r.status != 200 || r.json["purged"] != float64(2) {
		t.Errorf("purge mallory: %d %s", r.status, r.body)
	}
	recs := h.queued(t, dev.DID())
	if len(recs) != 2 || recs[0].From != alice.DID().String() || recs[1].From != alice.DID().String() {
		t.Errorf("after purging mallory: %v", recs)
	}
	if !strings.Contains(logs.String(), `msg="queue purged by an operator" component=relay operator=`+op.DID().String()+` agent=`+dev.DID().String()+` records="sender `+mallory.DID().String()+`" purged=2`) {
		t.Errorf("purge not logged:\n%s", logs.String())
	}
	if r = h.operatorReq(t, "DELETE", op, dev.DID(), "?all=1"); r.status != 200 || r.json["purged"] != float64(2) {
		t.Errorf("purge all: %d %s", r.status, r.body)
	}
	if r = h.operatorReq(t, "GET", op, dev.DID(), ""); r.status != 200 || r.json["messages"] != float64(0) {
		t.Errorf("list after purging all: %d %s", r.status, r.body)
	}
}

// TestOperatorQueueNoOperators: without operators nobody may list or
// purge, and the answer says why.
func TestOperatorQueueNoOperators(t *testing.T) {
	h := newHarness(t, nil)
	r := h.operatorReq(t, "GET", didtest.Key(t, 7), didtest.Key(t, 1).DID(), "")
	if r.status != 403 || !strings.Contains(r.json["message"].(string), "no operator") {
		t.Errorf("%d %s", r.status, r.body)
	}
}
