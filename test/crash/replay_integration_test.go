//go:build integration

package crash

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/replay"
)

const (
	childEnv = "TORPOR_CRASH_CHILD_DB"
	trials   = 20
)

var (
	issued = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	now    = issued.Add(time.Minute)
)

func issuer(tb testing.TB) *did.PrivateKey {
	tb.Helper()
	k, err := did.NewKeyFromSeed(make([]byte, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// object returns the signed object with the given id. Ed25519 is
// deterministic, so parent and child build the same bytes.
func object(tb testing.TB, k *did.PrivateKey, id string) []byte {
	tb.Helper()
	o, err := governed.Sign(k, governed.Template{
		ID: id, IssuedAt: issued, Semantic: governed.Semantic{Schema: "urn:torpor:test:crash"},
		Payload: map[string]string{"n": id}, Purpose: "comms:message", TTL: 24 * time.Hour,
	})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := o.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func receiver() *governed.Receiver {
	return &governed.Receiver{Purposes: []string{"comms:message"}, Clock: clocktest.New(now)}
}

func open(tb testing.TB, path string) (*bolt.DB, *replay.Cache) {
	tb.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := replay.Open(db, &replay.Options{Clock: clocktest.New(now)})
	if err != nil {
		db.Close()
		tb.Fatal(err)
	}
	return db, c
}

// TestReplayCrashChild is the child process: it runs only when the parent
// sets childEnv. It accepts objects in transactions of 1 to 5, through the
// receiver checks with the replay cache in the transaction, and prints
// "committed <id>" for each object once its transaction committed, until it
// is killed.
func TestReplayCrashChild(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("child process of TestReplayCrash")
	}
	trial := os.Getenv("TORPOR_CRASH_TRIAL")
	k := issuer(t)
	db, c := open(t, path)
	r := receiver()
	out := bufio.NewWriter(os.Stdout)
	for n := 0; n < 1_000_000; {
		var ids []string
		err := db.Update(func(tx *bolt.Tx) error {
			for range 1 + rand.IntN(5) {
				id := fmt.Sprintf("t%s-%d", trial, n+len(ids))
				if _, err := r.Accept(object(t, k, id), governed.Input{Replay: c.Tx(tx)}); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n += len(ids)
		for _, id := range ids {
			fmt.Fprintln(out, "committed", id)
		}
		out.Flush() // reported only after the commit returned
	}
}

// TestReplayCrash kills the child with SIGKILL after a random number of
// reported commits, 20 times on one database file, and after each kill
// reopens the file and presents every object the child ever reported
// again: each must be refused as a replay, and the file must pass bbolt's
// consistency check.
func TestReplayCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	k := issuer(t)
	var reported []string
	for trial := range trials {
		killAfter := 1 + rand.IntN(150)
		got := runChild(t, path, trial, killAfter)
		if len(got) < killAfter {
			t.Fatalf("trial %d: child reported %d commits before dying, want at least %d", trial, len(got), killAfter)
		}
		reported = append(reported, got...)
		db, c := open(t, path)
		if err := db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("trial %d: bbolt consistency check: %v", trial, err)
		}
		r := receiver()
		for _, id := range reported {
			err := db.Update(func(tx *bolt.Tx) error {
				_, err := r.Accept(object(t, k, id), governed.Input{Replay: c.Tx(tx)})
				return err
			})
			if governed.ReasonOf(err) != governed.ReasonReplay {
				t.Fatalf("trial %d: object %s, reported committed, presented again: %v; want replay", trial, id, err)
			}
		}
		db.Close()
		t.Logf("trial %d: killed after %d reported commits (%d in total, all refused as replays)", trial, len(got), len(reported))
	}
}

// runChild starts the child, kills it once it has reported killAfter
// commits, and returns every id it reported, including lines it wrote
// before the kill that were still in the pipe.
func runChild(t *testing.T, path string, trial, killAfter int) []string {
	t.Helper()
	return killChild(t, "TestReplayCrashChild", childEnv+"="+path, trial, killAfter, func(l string) (string, bool) {
		return strings.CutPrefix(l, "committed ")
	})
}
