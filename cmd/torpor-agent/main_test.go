package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
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
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Setup: func(env *testscript.Env) error {
		// Handler paths must be absolute: $APPHANDLER is apphandler's.
		for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
			if p := filepath.Join(dir, "apphandler"); filepath.IsAbs(p) {
				if _, err := os.Stat(p); err == nil {
					env.Setenv("APPHANDLER", p)
					return nil
				}
			}
		}
		return errors.New("apphandler is not on the scripts' PATH")
	}})
}

// seed DATADIR KEYFILE writes an agent key and a store holding one
// indeterminate ledger key ("did:key:… pay-1", a reservation whose process
// died), one held action and one possibly lost hand-off (seq 7).
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
	l, err := ledger.Open(db, nil)
	if err != nil {
		return err
	}
	g, err := gate.Open(l, gate.Config{Agent: k.DID(), Consequential: purpose.Set{"action:*"}})
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
		if _, err := g.Decide(tx, a); err != nil {
			return err
		}
		if err := l.RecordLost(tx, ledger.Lost{ObjectID: "019bc186-de00-7619-8837-14d9cfa06ed2", Issuer: alice.DID().String(), Purpose: "comms:message", Seq: 7}); err != nil {
			return err
		}
		return l.Reserve(tx, ledger.Reservation{Key: alice.DID().String() + " pay-1", Action: "action:capture", EffectID: "psp-op-1"})
	})
}

// TestTimeEpoch: --time-epoch overrides the file's timeEpoch and a bad one
// is refused with the flag named.
func TestTimeEpoch(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(conf, []byte(`{"version": 1, "timeScale": 60, "timeEpoch": "1796320800"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _, err := parseArgs([]string{"--config", conf, "--time-epoch", "2026-12-03T18:00:01Z"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.file()
	if err != nil || f.TimeEpoch != "2026-12-03T18:00:01Z" {
		t.Errorf("file() = %+v, %v; want the flag's epoch", f, err)
	}
	var stderr strings.Builder
	if code := run([]string{"--time-epoch", "soon"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), `invalid value "soon" for flag -time-epoch`) {
		t.Errorf("torpor-agent --time-epoch soon: exit %d, stderr %q; want 2 and the flag named", code, stderr.String())
	}
}

// TestTimeScale: --time-scale and the file's timeScale take 1 to 100000;
// anything else is an error naming the range, as torpor-relay's is, never
// quietly real time (clocktest.ScaleFlagCases).
func TestTimeScale(t *testing.T) {
	for _, tt := range clocktest.ScaleFlagCases {
		var stderr strings.Builder
		code := run([]string{"--time-scale", tt.In}, io.Discard, &stderr)
		if tt.WantErr != "" {
			if code != 2 || !strings.Contains(stderr.String(), tt.WantErr) {
				t.Errorf("torpor-agent --time-scale %s: exit %d, stderr %q; want 2 and %q", tt.In, code, stderr.String(), tt.WantErr)
			}
			continue
		}
		a, _, err := parseArgs([]string{"--time-scale", tt.In}, io.Discard)
		if err != nil || a.timeScale != tt.Want {
			t.Errorf("parseArgs(--time-scale %s) = %v, want time scale %v", tt.In, err, tt.Want)
		}
	}

	// The file is checked too: a bad timeScale there is reported with the
	// other problems of the configuration.
	for _, scale := range []string{"0.5", "-1", "1e9"} {
		conf := filepath.Join(t.TempDir(), "agent.json")
		if err := os.WriteFile(conf, []byte(`{"version": 1, "timeScale": `+scale+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		code := run([]string{"--config", conf}, io.Discard, &stderr)
		want := "timeScale (or --time-scale): time scale " + scale + " is out of range"
		if scale == "1e9" {
			want = "time scale 1e+09 is out of range"
		}
		if code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf(`torpor-agent with {"timeScale": %s}: exit %d, stderr %q; want 1 and %q`, scale, code, stderr.String(), want)
		}
	}
}
