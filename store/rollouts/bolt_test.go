package rollouts_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/rollouts/rolloutstest"
)

// TestBoltContract runs the contract on a real bbolt file per check; the
// stores one check opens share one *Bolt (bbolt locks its file against a
// second opener).
func TestBoltContract(t *testing.T) {
	rolloutstest.Run(t, func(t testing.TB) rollouts.Store { return shared(t) })
}

var (
	mu     sync.Mutex
	byTest = map[string]*rollouts.Bolt{}
)

func shared(t testing.TB) rollouts.Store {
	mu.Lock()
	defer mu.Unlock()
	if b, ok := byTest[t.Name()]; ok {
		return b
	}
	b, err := rollouts.OpenBolt(filepath.Join(t.TempDir(), "rollouts.db"))
	if err != nil {
		t.Fatal(err)
	}
	byTest[t.Name()] = b
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBoltReopen: a record survives closing and opening the file again.
func TestBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollouts.db")
	b, err := rollouts.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := b.Put(t.Context(), "r", []byte("kept"), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, err = rollouts.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v, r, err := b.Get(t.Context(), "r"); err != nil || string(v) != "kept" || r != rev {
		t.Errorf("after reopening, Get = %q, %d, %v; want kept at %d", v, r, err, rev)
	}
}
