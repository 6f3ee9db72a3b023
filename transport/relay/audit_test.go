package relay

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
)

// auditHarness is a harness whose relay keeps an audit log, with op as
// its operator.
func auditHarness(t *testing.T, op did.DID) (*harness, audit.Store) {
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := newHarness(t, func(c *Config) {
		c.Access.Operators = []did.DID{op}
		c.Stores.Audit = st
	})
	return h, st
}

// auditRecords returns the log, oldest first, without Seq and Time
// (checked to be the relay's clock).
func auditRecords(t *testing.T, h *harness, st audit.Store) []audit.Record {
	t.Helper()
	p, err := st.List(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for i := len(p.Records) - 1; i >= 0; i-- {
		r := p.Records[i]
		if !r.Time.Equal(h.clk.Now()) {
			t.Errorf("record %d dated %v, want the relay's clock %v", r.Seq, r.Time, h.clk.Now())
		}
		r.Seq, r.Time = 0, t0
		out = append(out, r)
	}
	return out
}

// TestAuditOperatorActions: an admission and a purge are recorded with
// the operator, the device and what was purged; a stranger's refused
// purge and a purge naming nothing are recorded as refused with why; a
// request without a token and a queue listing are not recorded; no token
// reaches the log.
func TestAuditOperatorActions(t *testing.T) {
	op, alice := didtest.Key(t, 7), didtest.Key(t, 2)
	h, st := auditHarness(t, op.DID())
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 503 {
		t.Fatalf("enqueue: %d %s", r.status, r.body)
	}
	steps := []struct {
		name   string
		do     func() resp
		status int
	}{
		{"no token", func() resp { return h.operatorReq(t, "DELETE", nil, dev.DID(), "?all=1") }, 401},
		{"a stranger", func() resp { return h.operatorReq(t, "DELETE", alice, dev.DID(), "?all=1") }, 403},
		{"no selection", func() resp { return h.operatorReq(t, "DELETE", op, dev.DID(), "") }, 400},
		{"list", func() resp { return h.operatorReq(t, "GET", op, dev.DID(), "") }, 200},
		{"purge", func() resp { return h.operatorReq(t, "DELETE", op, dev.DID(), "?all=1") }, 200},
		{"admit", func() resp { return h.admitAs(t, dev.DID(), op) }, 200},
	}
	for _, s := range steps {
		if r := s.do(); r.status != s.status {
			t.Fatalf("%s: %d %s, want %d", s.name, r.status, r.body, s.status)
		}
	}
	d := dev.DID().String()
	want := []audit.Record{
		{Operator: alice.DID().String(), Action: audit.ActionPurge, Device: d, Outcome: audit.Refused, Reason: "not an operator of this relay"},
		{Operator: op.DID().String(), Action: audit.ActionPurge, Device: d, Outcome: audit.Refused, Reason: "bad selection: " + errNoSelection.Error()},
		{Operator: op.DID().String(), Action: audit.ActionPurge, Device: d, Detail: fmt.Sprintf("all: 1 records, %d bytes", len(sendV1)), Outcome: audit.OK},
		{Operator: op.DID().String(), Action: audit.ActionAdmit, Device: d, Outcome: audit.OK},
	}
	got := auditRecords(t, h, st)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		want[i].Time = t0
		if got[i] != want[i] {
			t.Errorf("record %d = %+v\nwant %+v", i, got[i], want[i])
		}
		if strings.Contains(got[i].Detail+got[i].Reason, "eyJ") {
			t.Errorf("record %d holds a token", i)
		}
	}
}
