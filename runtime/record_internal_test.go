package runtime

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
)

// TestTheStatusReadsTheCommittedWakeFromMemory: once the pipeline has
// committed a wake's record, the status takes the last wake from memory
// instead of decoding it from the store (fewer allocations), and says
// of it what the store's copy says.
func TestTheStatusReadsTheCommittedWakeFromMemory(t *testing.T) {
	db, p := openPipeline(t)
	at := time.Date(2026, 12, 6, 7, 0, 0, 123456789, time.UTC)
	r := WakeReport{At: at, Reason: "timer", Mode: "hourly_wake", Awake: 5*time.Minute + 1234567*time.Microsecond,
		NextWake: at.Add(time.Hour), LinkSent: 2000}
	for i, name := range []string{PhaseLink, PhasePulse, PhasePublish, PhaseDrain, PhaseLive, PhaseClose} {
		r.Phases = append(r.Phases, Phase{Name: name, Start: time.Duration(i) * 3 * time.Millisecond, Duration: 7*time.Millisecond + 1})
	}
	p.keepWake(r)
	if err := p.RecordWake(); err != nil {
		t.Fatal(err)
	}
	ss, err := p.statusSince(nil)
	fromMemory := ss.st
	if err != nil {
		t.Fatal(err)
	}
	var fromStore WakeReport
	if err := db.View(func(tx *bolt.Tx) (err error) { fromStore, _, err = LastWake(tx); return err }); err != nil {
		t.Fatal(err)
	}
	// The store keeps times to the microsecond (encMode), as a float.
	got, want := *fromMemory.LastWake, *statusWake(fromStore)
	if d := got.At.Sub(want.At); d > time.Microsecond || d < -time.Microsecond {
		t.Errorf("the status's last wake is at %v; the store's at %v", got.At, want.At)
	}
	got.At = want.At
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the status's last wake = %+v; the store's says %+v", got, want)
	}
	known := testing.AllocsPerRun(20, func() { p.statusSince(nil) })
	p.unrec.stored = nil // as a process that committed no wake yet
	decoded := testing.AllocsPerRun(20, func() { p.statusSince(nil) })
	if decoded-known < 10 {
		t.Errorf("status with the last wake in memory: %v allocations; decoded from the store: %v; want 10 fewer or more", known, decoded)
	}
}

// TestTheStatusIsReadAgainOnlyAfterACommit: what a status reports from
// the store is read again only when a transaction was committed since the
// last read (the announce of an empty wake reads nothing: fewer
// allocations than a read), and a commit between the two (a halt) is read.
func TestTheStatusIsReadAgainOnlyAfterACommit(t *testing.T) {
	_, p := openPipeline(t)
	at := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	p.keepWake(WakeReport{At: at, Reason: "timer", Phases: []Phase{{Name: PhasePulse, Duration: time.Millisecond}}})
	if err := p.RecordWake(); err != nil {
		t.Fatal(err)
	}
	first, err := p.statusSince(nil)
	if err != nil || first.st.Halted || first.st.LastWake == nil || !first.st.LastWake.At.Equal(at) {
		t.Fatalf("statusSince(nil) = %+v, %v; want not halted, the last wake at %v", first.st, err, at)
	}
	kept, err := p.statusSince(&first)
	if err != nil || !reflect.DeepEqual(kept, first) {
		t.Errorf("statusSince(the last read) with no commit since = %+v, %v; want the last read", kept, err)
	}
	again := testing.AllocsPerRun(20, func() { p.statusSince(&first) })
	read := testing.AllocsPerRun(20, func() { p.statusSince(nil) })
	t.Logf("allocations: %v kept, %v read", again, read)
	if read-again < 10 {
		t.Errorf("statusSince with no commit since: %v allocations; read from the store: %v; want 10 fewer or more", again, read)
	}
	if err := p.Halt("tester", "lost phone"); err != nil {
		t.Fatal(err)
	}
	after, err := p.statusSince(&first)
	if err != nil || !after.st.Halted || after.txid == first.txid {
		t.Errorf("statusSince after a halt = %+v (tx %d, before %d), %v; want it halted, read again", after.st, after.txid, first.txid, err)
	}
}

// openPipeline opens a pipeline on a new store file, closed when t ends.
func openPipeline(t *testing.T) (*bolt.DB, *Pipeline) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := OpenPipeline(db, PipelineConfig{Key: didtest.Key(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}
