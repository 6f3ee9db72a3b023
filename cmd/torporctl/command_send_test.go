package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// TestSendScripts runs testdata/send: torporctl send against a real relay
// (in-process, real clock) that knows three agents whose devices are not
// linked: one asleep with a wake scheduled in ten minutes, one in session
// mode (never queued for), one asleep whose card refuses plaintext, and a
// per-peer bound of 2.
func TestSendScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/send", Setup: setupRelay})
}

func setupRelay(env *testscript.Env) error {
	t := env.T().(testing.TB)
	bounds := queuebounds.Default()
	bounds.MaxPerPeer = 2
	r, err := worldtest.Open(t.TempDir(), relay.Config{Limits: relay.Limits{Bounds: bounds}})
	if err != nil {
		return err
	}
	env.Defer(r.Close)
	agents := []struct {
		env string
		st  agents.State
	}{
		{"AGENT_SLEEP", agents.State{Mode: wake.Sleep, NextWake: time.Now().Add(10 * time.Minute)}},
		{"AGENT_SESSION", agents.State{Mode: wake.Session}},
		{"AGENT_NO_PLAINTEXT", agents.State{Mode: wake.Sleep, NextWake: time.Now().Add(10 * time.Minute), Card: noPlaintextCard()}},
	}
	for _, a := range agents {
		k, err := did.Generate(nil)
		if err != nil {
			return err
		}
		if err := r.States.Put(context.Background(), k.DID().String(), a.st, nil, nil); err != nil {
			return err
		}
		env.Setenv(a.env, k.DID().String())
	}
	unknown, _ := did.Generate(nil)
	env.Setenv("AGENT_UNKNOWN", unknown.DID().String())
	env.Setenv("TORPOR_RELAY", r.URL)
	// The same relay by another name: tokens for it name the wrong audience.
	env.Setenv("RELAY_OTHER_NAME", strings.Replace(r.URL, "127.0.0.1", "localhost", 1))
	return nil
}

// noPlaintextCard is an Agent Card whose policy extension refuses
// unencrypted objects.
func noPlaintextCard() []byte {
	p, _ := json.Marshal(a2a.Policy{Plaintext: false})
	c := a2a.Card{Name: "no-plaintext"}
	c.Capabilities.Extensions = []a2a.Extension{{URI: a2a.ExtPolicy, Params: p}}
	raw, _ := json.Marshal(c)
	return raw
}
