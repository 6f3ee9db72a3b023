package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
)

// TestMain lets the testscript scripts in testdata/script run torpor-agent
// as a command in the same binary, and seed an agent store to operate on.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"torpor-agent": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		"agentseed":    func() { os.Exit(seed(os.Args[1:])) },
		// apphandler is an exec handler: it reads the delivery and answers
		// with a receipt naming the effect.
		"apphandler": func() {
			io.Copy(io.Discard, os.Stdin)
			fmt.Print(`{"effectId":"psp-77"}`)
			os.Exit(0)
		},
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// seed DATADIR KEYFILE writes an agent key and a store holding one
// indeterminate ledger key ("did:key:… pay-1", a reservation whose process
// died) and one held action.
func seed(argv []string) int {
	if err := seedStore(argv[0], argv[1]); err != nil {
		fmt.Fprintln(os.Stderr, "agentseed:", err)
		return 1
	}
	return 0
}

func seedStore(dataDir, keyFile string) error {
	k, err := did.NewKeyFromSeed(make([]byte, 32))
	if err != nil {
		return err
	}
	if err := did.SaveKey(keyFile, k, false); err != nil {
		return err
	}
	alice, _ := did.NewKeyFromSeed(append(make([]byte, 31), 1))
	db, err := store.Open(filepath.Join(dataDir, runtime.DBFile), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := runtime.OpenPipeline(db, runtime.PipelineConfig{Key: k, Consequential: purpose.Set{"action:*"}})
	if err != nil {
		return err
	}
	o, err := governed.Sign(alice, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: "https://torpor.dev/s"},
		Payload: map[string]any{"idempotencyKey": "order-9"}, Purpose: "action:capture", TTL: 24 * time.Hour})
	if err != nil {
		return err
	}
	a, err := gate.ActionOf(o, []byte(`{"object":{},"objectId":"x","issuer":"y","purpose":"action:capture","dequeuedAt":"2026-01-15T14:00:00Z"}`))
	if err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		if _, err := p.Gate.Decide(tx, a); err != nil {
			return err
		}
		return p.Ledger.Reserve(tx, ledger.Reservation{Key: alice.DID().String() + " pay-1", Action: "action:capture", EffectID: "psp-op-1"})
	})
}
