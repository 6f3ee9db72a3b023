//go:build integration

package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/broker"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// TestCLI runs testdata/*.txt with the torporctl binary built from this
// tree on PATH and the custom command "stack".
func TestCLI(t *testing.T) {
	bin := filepath.Dir(testenv.Binary(t, "torporctl"))
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			// torporctl's device pins stay in the test's directory.
			env.Setenv("TORPOR_KNOWN_DEVICES", filepath.Join(env.WorkDir, "known_devices"))
			env.Values["stack"] = &stack{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"stack": cmdStack},
	})
}

// stack is the relay, broker and agent one script runs against.
type stack struct {
	mu    sync.Mutex
	count int // objects the application received
}

func (s *stack) Deliver(_ context.Context, d deliver.Delivery) (deliver.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	return deliver.Outcome{OK: true}, nil
}

// cmdStack is the script command
//
//	stack start OPERATOR_KEY   start relay, broker and agent (always_on,
//	                           30 s windows); OPERATOR_KEY's DID may
//	                           command it and is the relay's operator.
//	                           Sets RELAY, BROKER, BROKER_HOSTPORT (its
//	                           address without a scheme), AGENT (the
//	                           agent's DID) and DEVICE (its name).
//	stack delivered N          the application received at least N objects
func cmdStack(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: stack start KEY | stack delivered N")
	}
	switch args[0] {
	case "start":
		if len(args) != 2 {
			ts.Fatalf("usage: stack start OPERATOR_KEY")
		}
		startStack(ts, ts.MkAbs(args[1]))
	case "delivered":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		s := ts.Value("stack").(*stack)
		s.mu.Lock()
		got := s.count
		s.mu.Unlock()
		if (got >= n) == neg {
			ts.Fatalf("the application received %d objects, want at least %d", got, n)
		}
	default:
		ts.Fatalf("unknown stack command %q", args[0])
	}
}

// agentConfig is the always-on agent of the stack: plaintext and MLS,
// every comms purpose to s.
func agentConfig(key *did.PrivateKey, owner did.DID, agentDir, relayURL string, s *stack, log *slog.Logger) runtime.Config {
	return runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Owner: owner, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: s}}},
		Store: runtime.Store{DataDir: agentDir},
		Relay: runtime.Relay{URL: relayURL},
		Name:  "cli-agent",
		Schedule: runtime.Schedule{
			Mode:         wake.AlwaysOn,
			WindowLength: 30 * time.Second,
		},
		MLS: runtime.MLS{
			OpenMLS: func(db *bolt.DB) (drain.Sessions, runtime.KeyPackages, error) {
				ss, err := session.New(session.Config{Key: key})
				if err != nil {
					return nil, nil, err
				}
				return sessions.Sessions{S: ss}, sessions.KeyPackages{S: ss, DB: db}, nil
			},
			KeyPackageTarget: 4,
		},
		Logger: log,
	}
}

func startStack(ts *testscript.TestScript, opKeyFile string) {
	op, err := did.LoadKey(opKeyFile)
	ts.Check(err)
	dir := ts.MkAbs("stack")
	ts.Check(os.MkdirAll(dir, 0o700))
	brk, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", DataDir: dir, Operators: []did.DID{op.DID()}})
	ts.Check(err)
	log := slog.New(slog.NewTextHandler(logFile(ts, filepath.Join(dir, "stack.log")), nil))
	r, err := worldtest.Open(dir, relay.Config{Ops: relay.Ops{MQTTBroker: brk.URL()}, Logger: log, Access: relay.Access{Operators: []did.DID{op.DID()}}})
	ts.Check(err)

	key, err := did.Generate(nil)
	ts.Check(err)
	s := ts.Value("stack").(*stack)
	cfg := agentConfig(key, op.DID(), filepath.Join(dir, "agent"), r.URL, s, log)
	a, err := runtime.New(cfg)
	ts.Check(err)
	cmds, err := manage.NewCommands(a, manage.CommandsConfig{Broker: brk.URL(), Name: "cli-device",
		Operators: []did.DID{op.DID()}, Logger: log})
	ts.Check(err)
	a.SetManagement(cmds)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	ts.Defer(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			ts.Logf("agent: %v", err)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmds.Close(cctx)
		ccancel()
		r.Close()
		brk.Close()
	})
	ts.Setenv("RELAY", r.URL)
	ts.Setenv("BROKER", brk.URL())
	ts.Setenv("BROKER_HOSTPORT", brk.Addr())
	ts.Setenv("AGENT", key.DID().String())
	ts.Setenv("DEVICE", "cli-device")
}

// logFile opens a log file the script can show on failure.
func logFile(ts *testscript.TestScript, path string) *os.File {
	f, err := os.Create(path)
	ts.Check(err)
	ts.Defer(func() { f.Close() })
	return f
}
