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
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := OpenPipeline(db, PipelineConfig{Key: didtest.Key(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
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
	fromMemory, err := p.status()
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
	known := testing.AllocsPerRun(20, func() { p.status() })
	p.unrec.stored = nil // as a process that committed no wake yet
	decoded := testing.AllocsPerRun(20, func() { p.status() })
	if decoded-known < 10 {
		t.Errorf("status with the last wake in memory: %v allocations; decoded from the store: %v; want 10 fewer or more", known, decoded)
	}
}
