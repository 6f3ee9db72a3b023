package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestSignStatusFits: held actions with long keys (a sender chooses its
// idempotency keys) are listed fewer until the status fits the relay's
// limit, and still counted; a status that cannot fit is an error, not a
// loop.
func TestSignStatusFits(t *testing.T) {
	key := didtest.Key(t, 1)
	st := wire.Status{Version: "1", HeldCount: wire.MaxStatusHeld}
	for range wire.MaxStatusHeld {
		st.Held = append(st.Held, wire.StatusHeld{Key: strings.Repeat("k", 2000), Purpose: "action:x"})
	}
	b, err := signStatus(key, time.Unix(0, 0), st)
	if err != nil || len(b) > wire.MaxStatus {
		t.Fatalf("signStatus = %d bytes, %v; want at most %d", len(b), err, wire.MaxStatus)
	}
	o, err := governed.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParseStatus(o.Payload)
	if err != nil || got.HeldCount != wire.MaxStatusHeld || len(got.Held) == 0 || len(got.Held) >= wire.MaxStatusHeld {
		t.Errorf("status lists %d of %d held, %v; want fewer than all, and the count kept", len(got.Held), got.HeldCount, err)
	}
	if _, err := signStatus(key, time.Unix(0, 0), wire.Status{Version: strings.Repeat("v", wire.MaxStatus)}); err == nil {
		t.Error("a status too large with nothing to drop was signed")
	}
}
