package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// countingScope answers from its maps and counts the questions, as the
// tenants ledger behind the broker would be asked.
type countingScope struct {
	tenant map[did.DID]TenantView
	ops    map[did.DID]bool
	fail   error
	asked  int
}

func (s *countingScope) DeviceTenant(dev did.DID) (TenantView, bool, error) {
	s.asked++
	t, in := s.tenant[dev]
	return t, in, s.fail
}

func (s *countingScope) IsTenantOperator(d did.DID) (bool, error) {
	s.asked++
	return s.ops[d], s.fail
}

// TestScopeCache: the ACL's questions about a DID reach the ledger once
// per ScopeCacheTTL of the broker's clock, a change in the ledger is
// seen after it, and a failed question is asked again at once.
func TestScopeCache(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC))
	dev, op := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID()
	s := &countingScope{tenant: map[did.DID]TenantView{dev: {Operators: []did.DID{op}}}, ops: map[did.DID]bool{op: true}}
	c := newScopeCache(s, clk)
	for range 3 {
		if v, in, err := c.DeviceTenant(dev); err != nil || !in || len(v.Operators) != 1 {
			t.Fatalf("DeviceTenant = %+v, %v, %v", v, in, err)
		}
		if ok, err := c.IsTenantOperator(op); err != nil || !ok {
			t.Fatalf("IsTenantOperator = %v, %v", ok, err)
		}
	}
	if s.asked != 2 {
		t.Fatalf("the ledger was asked %d times for 3 rounds of both questions; want 2", s.asked)
	}
	delete(s.tenant, dev) // the device left its tenant
	clk.Advance(ScopeCacheTTL - time.Millisecond)
	if _, in, _ := c.DeviceTenant(dev); !in {
		t.Fatal("the change was seen before ScopeCacheTTL passed")
	}
	clk.Advance(time.Millisecond)
	if _, in, _ := c.DeviceTenant(dev); in {
		t.Fatal("the device is still in its tenant after ScopeCacheTTL")
	}
	s.fail, s.asked = errors.New("ledger down"), 0
	other := didtest.Key(t, 3).DID()
	for range 2 {
		if _, err := c.IsTenantOperator(other); err == nil {
			t.Fatal("the ledger's failure was not returned")
		}
	}
	if s.asked != 2 {
		t.Errorf("a failed question was asked %d times in 2 checks; want 2 (failures are not kept)", s.asked)
	}
}
