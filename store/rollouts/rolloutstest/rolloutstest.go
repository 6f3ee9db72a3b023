// Package rolloutstest is the contract every store/rollouts.Store keeps,
// run against each engine's files or servers by its own tests.
package rolloutstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/store/rollouts"
)

// Open opens a store; called twice in a test, the second store must see
// what the first wrote (the same file, or a second relay on the same
// cluster).
type Open func(t testing.TB) rollouts.Store

// Run runs the contract against stores opened by open, each check on a
// fresh store (the first call of open in it).
func Run(t *testing.T, open Open) {
	t.Run("CreateGetList", func(t *testing.T) { createGetList(t, open) })
	t.Run("Conflict", func(t *testing.T) { conflict(t, open) })
	t.Run("Refused", func(t *testing.T) { refused(t, open) })
	t.Run("TenantKeys", func(t *testing.T) { tenantKeys(t, open) })
	t.Run("ConcurrentWriters", func(t *testing.T) { concurrent(t, open) })
}

func createGetList(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t)
	if ids, err := s.List(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("List of an empty store = %v, %v", ids, err)
	}
	if _, _, err := s.Get(ctx, "r1"); !errors.Is(err, rollouts.ErrNotFound) {
		t.Fatalf("Get(r1) of an empty store: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"r2", "r1", "fw-1.4.0"} {
		if rev, err := s.Put(ctx, id, []byte("v1 "+id), 0); err != nil || rev == 0 {
			t.Fatalf("Put(%s, create) = %d, %v", id, rev, err)
		}
	}
	v, rev, err := s.Get(ctx, "r1")
	if err != nil || string(v) != "v1 r1" {
		t.Fatalf("Get(r1) = %q, %v", v, err)
	}
	rev2, err := s.Put(ctx, "r1", []byte("v2"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("Put(r1, %d) = %d, %v; want a greater revision", rev, rev2, err)
	}
	other := open(t)
	if v, r, err := other.Get(ctx, "r1"); err != nil || string(v) != "v2" || r != rev2 {
		t.Fatalf("a second store's Get(r1) = %q, %d, %v; want v2 at %d", v, r, err, rev2)
	}
	ids, err := other.List(ctx)
	if err != nil || !slices.Equal(ids, []string{"fw-1.4.0", "r1", "r2"}) {
		t.Fatalf("List = %v, %v", ids, err)
	}
}

func conflict(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t)
	rev, err := s.Put(ctx, "r", []byte("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "r", []byte("b"), 0); !errors.Is(err, rollouts.ErrConflict) {
		t.Errorf("creating r again: %v, want ErrConflict", err)
	}
	if _, err := s.Put(ctx, "r", []byte("b"), rev+7); !errors.Is(err, rollouts.ErrConflict) {
		t.Errorf("Put at a wrong revision: %v, want ErrConflict", err)
	}
	if v, _, err := s.Get(ctx, "r"); err != nil || string(v) != "a" {
		t.Errorf("after refused Puts, Get = %q, %v; want a", v, err)
	}
}

func refused(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t)
	bad := []string{"", "a b", "a/b", "a*", strings.Repeat("x", rollouts.MaxID+1),
		"tenant/r1", "tenant/" + strings.Repeat("A", 32) + "/r1", "tenant/" + strings.Repeat("a", 31) + "/r1", rollouts.Key("did:key:zA", "a/b")}
	for _, id := range bad {
		if _, err := s.Put(ctx, id, []byte("v"), 0); err == nil {
			t.Errorf("Put(%q) accepted a bad id", id)
		}
	}
	big := bytes.Repeat([]byte{'x'}, rollouts.MaxRecord+1)
	if _, err := s.Put(ctx, "big", big, 0); !errors.Is(err, rollouts.ErrTooLarge) {
		t.Errorf("Put of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	max := bytes.Repeat([]byte{'y'}, rollouts.MaxRecord)
	if _, err := s.Put(ctx, "max", max, 0); err != nil {
		t.Errorf("Put of MaxRecord bytes: %v", err)
	} else if v, _, err := s.Get(ctx, "max"); err != nil || !bytes.Equal(v, max) {
		t.Errorf("Get of the MaxRecord record: %d bytes, %v", len(v), err)
	}
}

// tenantKeys: the same id under the relay's key and two tenants' keys is
// three records, each listed under its own key.
func tenantKeys(t *testing.T, open Open) {
	ctx := context.Background()
	s := open(t)
	keys := []string{"v2", rollouts.Key("did:key:zA", "v2"), rollouts.Key("did:key:zB", "v2")}
	for _, k := range keys {
		if _, err := s.Put(ctx, k, []byte(k), 0); err != nil {
			t.Fatalf("Put(%q, create) = %v", k, err)
		}
	}
	for _, k := range keys {
		if v, _, err := open(t).Get(ctx, k); err != nil || string(v) != k {
			t.Errorf("Get(%q) = %q, %v", k, v, err)
		}
	}
	ids, err := s.List(ctx)
	if want := slices.Sorted(slices.Values(keys)); err != nil || !slices.Equal(ids, want) {
		t.Errorf("List = %v, %v; want %v", ids, err, want)
	}
}

// concurrent: 4 stores (as 4 relays) each add 10 marks to one record by
// read-modify-compare-and-swap: no mark is lost.
func concurrent(t *testing.T, open Open) {
	ctx := context.Background()
	if _, err := open(t).Put(ctx, "c", nil, 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		s := open(t)
		wg.Go(func() {
			for i := range 10 {
				if err := addMark(ctx, s, fmt.Sprintf("%d.%d;", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	v, _, err := open(t).Get(ctx, "c")
	if n := strings.Count(string(v), ";"); err != nil || n != 40 {
		t.Errorf("after 40 concurrent adds the record has %d marks, %v", n, err)
	}
}

func addMark(ctx context.Context, s rollouts.Store, mark string) error {
	for {
		v, rev, err := s.Get(ctx, "c")
		if err != nil {
			return err
		}
		_, err = s.Put(ctx, "c", append(v, mark...), rev)
		if !errors.Is(err, rollouts.ErrConflict) {
			return err
		}
	}
}
