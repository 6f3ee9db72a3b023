package bearer

import (
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
)

// TestSpentOnce: a token is spent once; a second spend is ErrReplayed; an
// expired one is forgotten when the memory is full; a full memory of
// unexpired tokens refuses a new one (ErrSpentFull) rather than forget one.
func TestSpentOnce(t *testing.T) {
	k, err := did.NewKeyFromSeed(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	mint := func(at time.Time) *Token {
		s, err := IssuePurpose(k, "https://relay.example", OperatorPurpose("GET", "/operator/queue/x"), at, OperatorTTL)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s := &Spent{Max: 2}
	a := mint(now)
	if err := s.Spend(a, now); err != nil {
		t.Fatal(err)
	}
	if err := s.Spend(a, now.Add(time.Second)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second spend: %v, want ErrReplayed", err)
	}
	if err := s.Spend(mint(now), now); err != nil {
		t.Fatal(err)
	}
	if err := s.Spend(mint(now), now); !errors.Is(err, ErrSpentFull) {
		t.Fatalf("full: %v, want ErrSpentFull", err)
	}
	later := now.Add(2 * OperatorTTL)
	if err := s.Spend(mint(later), later); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
}
