package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// takeKeyPackages fetches KeyPackages of agent from the relay, as
// initiators do, until its pool is empty (it answers with the last-resort
// KeyPackage, or none), and returns how many distinct ones it handed out. The relay serves one caller 30 a minute: keep pools
// below that.
func (w *cmdWorld) takeKeyPackages() int {
	w.T.Helper()
	seen := map[string]bool{}
	for {
		resp := getKeyPackage(w.T, w.Relay.URL+"/a/"+w.Key.DID().String()+"/mls/key-package", w.Clock.Now())
		var v struct {
			Wire       string
			LastResort bool
		}
		err := json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable, err == nil && v.LastResort:
			return len(seen)
		case resp.StatusCode != http.StatusOK || err != nil:
			w.T.Fatalf("fetching a KeyPackage: %d, %v", resp.StatusCode, err)
		case seen[v.Wire]:
			w.T.Fatal("the relay handed out a KeyPackage twice")
		}
		seen[v.Wire] = true
	}
}

// withMLSPool gives a cmdWorld's agent MLS sessions and its KeyPackage
// pool (session.DefaultPoolSize) on its bbolt file.
func withMLSPool(w *cmdWorld, cfg *runtime.Config, _ *manage.CommandsConfig) {
	cfg.AllowPlaintext = false
	cfg.MLS.OpenMLS = func(db *bolt.DB) (drain.Sessions, runtime.KeyPackages, error) {
		s, err := session.New(session.Config{Key: w.Key, Clock: w.Clock})
		if err != nil {
			return nil, nil, err
		}
		return sessions.Sessions{S: s}, sessions.KeyPackages{S: s, DB: db}, nil
	}
}

// TestRefillKeyPackagesOverMQTT: refill-keypackages with a count above the
// pool size, sent while the agent sleeps, runs at its window and makes the
// new KeyPackages (not yet published); the next wake uploads them, and the
// relay then hands out the count asked for.
func TestRefillKeyPackagesOverMQTT(t *testing.T) {
	const count = session.DefaultPoolSize + 4
	w := newCmdWorldWith(t, wake.HourlyWake, withMLSPool)
	w.Run()
	if boot := w.NextWake(); boot.LinkErr != "" {
		t.Fatalf("boot wake: %+v", boot) // publishes the pool of DefaultPoolSize
	}
	start, end := w.Window.Next(cmdStart)
	id := w.Send(command.OpRefillKeyPackages, &command.RefillArgs{Count: count})
	w.Clock.Set(start)
	r := w.Reply(id)
	if want := `{"unpublished":4}`; r.Outcome != command.OutcomeOK || string(r.Result) != want {
		t.Fatalf("refill-keypackages %d = %+v %s, want ok %s", count, r, r.Result, want)
	}
	w.Clock.Set(end)
	w.NextWake()

	next, _ := w.Window.Next(end)
	w.Clock.Set(next)
	w.WaitPhase(runtime.PhasePublish)
	if n := w.takeKeyPackages(); n != count {
		t.Errorf("after the next wake the relay handed out %d KeyPackages, want the %d refill-keypackages asked for", n, count)
	}
}

// publishedLink passes on every state frame the relay accepted.
type publishedLink struct {
	runtime.Link
	published chan<- wire.State
}

func (l publishedLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	ok, err := l.Link.Publish(ctx, st)
	if err == nil {
		l.published <- st
	}
	return ok, err
}

// TestRefillKeyPackagesAlwaysOn: an always_on agent has no next wake; the
// KeyPackages refill-keypackages made go to the relay with its next state
// publication, the hourly pulse's.
func TestRefillKeyPackagesAlwaysOn(t *testing.T) {
	const count = session.DefaultPoolSize + 4
	published := make(chan wire.State, 16)
	w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, cfg *runtime.Config, cc *manage.CommandsConfig) {
		withMLSPool(w, cfg, cc)
		cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
			l, err := link.Dial(ctx, c)
			if err != nil {
				return nil, err
			}
			return publishedLink{l, published}, nil
		}
	})
	w.Run()
	if st := <-published; len(st.KeyPackages) != session.DefaultPoolSize {
		t.Fatalf("the wake published %d KeyPackages, want the pool of %d", len(st.KeyPackages), session.DefaultPoolSize)
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	if r := w.Command(command.OpRefillKeyPackages, &command.RefillArgs{Count: count}); r.Outcome != command.OutcomeOK || string(r.Result) != `{"unpublished":4}` {
		t.Fatalf("refill-keypackages %d = %+v %s, want ok with 4 unpublished", count, r, r.Result)
	}
	w.Clock.Advance(runtime.PulseInterval)
	select {
	case st := <-published:
		if st.Pulse == nil || len(st.KeyPackages) != 4 {
			t.Errorf("the hourly state frame carries a pulse: %v, %d KeyPackages; want a pulse and the 4 refilled", st.Pulse != nil, len(st.KeyPackages))
		}
	case <-w.Ctx().Done():
		t.Fatal("no hourly state frame")
	}
	if n := w.takeKeyPackages(); n != count {
		t.Errorf("after the hourly publication the relay handed out %d KeyPackages, want the %d refill-keypackages asked for", n, count)
	}
}
