package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay"
)

// TestAuditCommand: torporctl audit prints the relay's audit log newest
// first; --since counts back from the relay's clock, --limit caps it,
// --json prints the records; flags go anywhere; a key the relay does not
// list is refused with the relay's reason.
func TestAuditCommand(t *testing.T) {
	op, _ := did.Generate(nil)
	stranger, _ := did.Generate(nil)
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := worldtest.Start(t, relay.Config{Stores: relay.Stores{Audit: st},
		Ops: relay.Ops{Console: &relay.ConsoleConfig{Operators: []string{op.DID().String()}, Secret: make([]byte, 32)}}})
	now := time.Now()
	for i, ago := range []time.Duration{3 * time.Hour, 30 * time.Minute, time.Minute} {
		rec := audit.Record{Time: now.Add(-ago), Operator: op.DID().String(), Action: audit.ActionPurge,
			Device: "did:key:zDevice" + string(rune('A'+i)), Outcome: audit.OK}
		if i == 2 {
			rec.Action, rec.Command, rec.Outcome, rec.Reason = audit.ActionCommand, "set-mode", audit.Refused, "signature does not verify"
		}
		if err := st.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	opFile, strangerFile := keyFile(t, op), keyFile(t, stranger)
	code, out := ctl("audit", "--relay", r.URL, "--key", opFile)
	if code != 0 || !strings.Contains(out, "3 records") || strings.Index(out, "zDeviceC") > strings.Index(out, "zDeviceA") ||
		!strings.Contains(out, "device-command set-mode") || !strings.Contains(out, "refused: signature does not verify") {
		t.Errorf("audit: exit %d\n%s", code, out)
	}
	if code, out := ctl("audit", "--since", "1h", "--relay", r.URL, "--key", opFile); code != 0 || !strings.Contains(out, "2 records") || strings.Contains(out, "zDeviceA") {
		t.Errorf("audit --since 1h: exit %d\n%s", code, out)
	}
	code, out = ctl("audit", "--relay", r.URL, "--limit", "1", "--key", opFile, "--json")
	var recs []operatorapi.AuditRecord
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != 1 || recs[0].Command != "set-mode" {
		t.Errorf("audit --limit 1 --json: exit %d, %v\n%s", code, err, out)
	}
	if code, out := ctl("audit", "--relay", r.URL, "--key", strangerFile); code != 1 || !strings.Contains(out, "HTTP 401") {
		t.Errorf("audit by a stranger: exit %d\n%s", code, out)
	}
	if code, out := ctl("audit", "--relay", r.URL, "--key", opFile, "--limit", "0"); code != 2 {
		t.Errorf("audit --limit 0: exit %d\n%s", code, out)
	}
}
