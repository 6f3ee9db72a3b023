//go:build integration

package hostile

import (
	"os"
	"testing"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/store/storetest"
)

// TestAgentCorruptStore: for each way a disk damages agent.db (truncated,
// both meta pages zeroed, the second meta page zeroed, garbage over a page,
// cut to 100 bytes), the daemon does not panic or loop: it exits with 65
// (the unit's RestartPreventExitStatus), names the file and the fix, and
// leaves the file as it was; the operator commands refuse it too.
func TestAgentCorruptStore(t *testing.T) {
	for _, dmg := range storetest.Damages {
		t.Run(dmg.Name, func(t *testing.T) {
			d := agNewDevice(t)
			d.ranBefore()
			if err := dmg.Do(d.db); err != nil {
				t.Fatal(err)
			}
			before := digest(t, d.db)
			d.run(d.args()...).want(t, agExitStore, d.db+" is corrupt", "move "+d.db+" aside", "--reinitialise", "exit status 65")
			d.run(d.args("--reinitialise")...).want(t, agExitStore, d.db+" is corrupt")
			r := d.run(append([]string{"status"}, d.args()...)...)
			if r.code == 0 || !contains(r.stderr, "is corrupt") {
				t.Fatalf("status on a corrupt store: exit %d\n%s", r.code, r.stderr)
			}
			if digest(t, d.db) != before {
				t.Fatal("the refused runs changed the damaged file")
			}
		})
	}
}

// TestAgentEmptyStoreAfterRun: a zero-length agent.db after the device ran
// before is refused (exit 65, the marker named), not silently recreated
// un-halted with an empty replay cache; it stays zero-length.
func TestAgentEmptyStoreAfterRun(t *testing.T) {
	d := agNewDevice(t)
	d.ranBefore()
	if err := os.Truncate(d.db, 0); err != nil {
		t.Fatal(err)
	}
	d.run(d.args()...).want(t, agExitStore, d.db+" is empty (zero length)", d.key+runtime.MarkerSuffix, "--reinitialise")
	if fi, err := os.Stat(d.db); err != nil || fi.Size() != 0 {
		t.Fatalf("the refused run changed the empty store: %v, %v", fi, err)
	}
}

// TestAgentMissingStoreAfterRun: a missing agent.db after the device ran
// before is refused and not created.
func TestAgentMissingStoreAfterRun(t *testing.T) {
	d := agNewDevice(t)
	d.ranBefore()
	if err := os.Remove(d.db); err != nil {
		t.Fatal(err)
	}
	d.run(d.args()...).want(t, agExitStore, d.db+" is missing", "has run before", "--reinitialise")
	if exists(d.db) {
		t.Fatal("the refused run created a store")
	}
}

// TestAgentReinitialise: with --reinitialise a lost store is made anew and
// the agent runs; the next start, without the flag, uses it.
func TestAgentReinitialise(t *testing.T) {
	d := agNewDevice(t)
	d.ranBefore()
	os.Remove(d.db)
	r := d.runUntil(func() bool { return exists(d.db) }, d.args("--reinitialise")...)
	r.want(t, 0, "reinitialising the agent's store as asked")
	r = d.runUntil(func() bool { return true }, d.args()...)
	if r.code != 0 {
		t.Fatalf("start after reinitialising: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentFirstRunNeedsNoFlag: a new device (no marker) makes its store
// without --reinitialise and writes the marker next to its key.
func TestAgentFirstRunNeedsNoFlag(t *testing.T) {
	d := agNewDevice(t)
	d.ranBefore()
	b, err := os.ReadFile(d.key + runtime.MarkerSuffix)
	if err != nil || !contains(string(b), d.db) {
		t.Fatalf("marker: %q, %v; want it naming %s", b, err, d.db)
	}
}
