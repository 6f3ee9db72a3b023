package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// liveRelay answers every send as a relay does when it forwards the
// request to an awake device: 200 with the device's JSON-RPC body.
func liveRelay(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sendTo runs torporctl send with a new key against relay.
func sendTo(t *testing.T, relay string, args ...string) (int, string) {
	t.Helper()
	k, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := keyFile(t, k)
	agent, _ := did.Generate(nil)
	var out bytes.Buffer
	argv := append([]string{"send", "--key", key, "--relay", relay}, args...)
	argv = append(argv, agent.DID().String(), "hi")
	code := run(context.Background(), argv, &out, &out)
	return code, out.String()
}

// TestSendReportsLiveRejection: an awake agent that refuses the object
// answers 200 with a JSON-RPC error; send says it was rejected, with the
// agent's reason, and exits 1.
func TestSendReportsLiveRejection(t *testing.T) {
	srv := liveRelay(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"object rejected"}}`)
	code, out := sendTo(t, srv.URL, "--plaintext")
	if code != 1 || !strings.Contains(out, "rejected: the agent refused it, or the relay refused it for the agent by its signed policy (an unencrypted object where the policy takes none); nothing was queued: -32602 object rejected") {
		t.Fatalf("send to a rejecting agent: exit %d, output:\n%s", code, out)
	}
	code, out = sendTo(t, srv.URL, "--plaintext", "--json")
	if code != 1 || !strings.Contains(out, `"outcome": "rejected"`) || !strings.Contains(out, `"rpcCode": -32602`) {
		t.Fatalf("send --json to a rejecting agent: exit %d, output:\n%s", code, out)
	}
	srv = liveRelay(t, `{"jsonrpc":"2.0","id":1,"result":{"role":"ROLE_AGENT"}}`)
	if code, out := sendTo(t, srv.URL, "--plaintext"); code != 0 || !strings.HasPrefix(out, "delivered: ") {
		t.Fatalf("send to an accepting agent: exit %d, output:\n%s", code, out)
	}
}

// TestSendNamesTheSuccessorOfARetiredAgent: the relay's 410 for a DID
// retired by a key rotation is reported with the successor DID, exit 1.
func TestSendNamesTheSuccessorOfARetiredAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":"agent_retired","message":"this agent's key was rotated; send to its successor","queued":false,"successor":"did:key:z6MkNext"}`))
	}))
	t.Cleanup(srv.Close)
	code, out := sendTo(t, srv.URL, "--plaintext")
	if code != 1 || !strings.Contains(out, "refused: the agent's key was rotated; it is now did:key:z6MkNext: send to that DID") {
		t.Fatalf("send to a retired agent: exit %d, output:\n%s", code, out)
	}
	code, out = sendTo(t, srv.URL, "--sessions", filepath.Join(t.TempDir(), "me.sessions"))
	if code != 1 || !strings.Contains(out, "was retired when its key was rotated; it is now did:key:z6MkNext") {
		t.Fatalf("MLS send to a retired agent: exit %d, output:\n%s", code, out)
	}
}

// TestSendOnATimeScaledRelay: a relay with --time-scale checks tokens on
// its own clock, far from the real time; send's token is refused, with the
// relay's reason, unless send is given the relay's time scale, with which
// it dates token and object on the relay's clock.
func TestSendOnATimeScaledRelay(t *testing.T) {
	relayNow := time.Now().Add(5 * time.Hour) // a relay at 180x, some 100 s after its start
	r := worldtest.Start(t, relay.Config{Clock: scaledAt{clocktest.New(relayNow), 180}})
	agent, _ := did.Generate(nil)
	st := agents.State{Mode: wake.Sleep, NextWake: relayNow.Add(10 * time.Minute)}
	if err := r.States.Put(context.Background(), agent.DID().String(), st, nil, nil); err != nil {
		t.Fatal(err)
	}
	k, _ := did.Generate(nil)
	key := keyFile(t, k)
	send := func(args ...string) (int, string) {
		var out bytes.Buffer
		argv := append([]string{"send", "--key", key, "--relay", r.URL, "--plaintext"}, args...)
		code := run(context.Background(), append(argv, agent.DID().String(), "hi"), &out, &out)
		return code, out.String()
	}
	if code, out := send(); code != 1 || !strings.Contains(out, "refused: the relay did not accept your DID Bearer token: ") {
		t.Fatalf("send with the real clock: exit %d, output:\n%s", code, out)
	}
	if code, out := send("--time-scale", "180"); code != 0 || !strings.HasPrefix(out, "queued: ") {
		t.Fatalf("send --time-scale 180: exit %d, output:\n%s", code, out)
	}
	if code, out := send("--time-scale", "60"); code != 1 || !strings.Contains(out, "the relay runs at time scale 180") {
		t.Fatalf("send --time-scale 60 to a relay at 180: exit %d, output:\n%s", code, out)
	}
	// token minting follows the relay's clock the same way
	v := &bearer.Verifier{Audience: r.URL, Clock: clocktest.New(relayNow)}
	for _, scale := range []string{"1", "180"} {
		var out bytes.Buffer
		code := run(context.Background(), []string{"token", "--key", key, "--aud", r.URL, "--time-scale", scale}, &out, &out)
		_, err := v.Verify(bearer.Authorization(strings.TrimSpace(out.String())))
		if code != 0 || (err == nil) != (scale == "180") {
			t.Errorf("token --time-scale %s: exit %d, verified on the relay's clock: %v\n%s", scale, code, err, out.String())
		}
	}
}

// scaledAt is a test clock that says it runs at a time scale, as a relay's
// clock.Scaled does.
type scaledAt struct {
	*clocktest.Clock
	factor float64
}

func (s scaledAt) Factor() float64 { return s.factor }

// TestSendReportsLiveRejectionInMLS: the MLS path reports an awake agent's
// refusal as the plaintext path does. The stand-in relay serves one real
// KeyPackage of the agent and answers every post as a refusing agent.
func TestSendReportsLiveRejectionInMLS(t *testing.T) {
	agent, _ := did.Generate(nil)
	kp := keyPackage(t, agent)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(map[string]string{"did": agent.DID().String(), "wire": base64.StdEncoding.EncodeToString(kp)})
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"object rejected"}}`))
	}))
	t.Cleanup(srv.Close)
	k, _ := did.Generate(nil)
	key := keyFile(t, k)
	var out bytes.Buffer
	code := run(context.Background(), []string{"send", "--key", key, "--relay", srv.URL, agent.DID().String(), "hi"}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "rejected: the agent refused it, or the relay refused it for the agent by its signed policy (an unencrypted object where the policy takes none); nothing was queued: -32602 object rejected") {
		t.Fatalf("MLS send to a rejecting agent: exit %d, output:\n%s", code, out.String())
	}
}

// keyPackage makes one MLS KeyPackage of agent, as its device publishes.
func keyPackage(t *testing.T, agent *did.PrivateKey) []byte {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := session.New(session.Config{Key: agent})
	if err != nil {
		t.Fatal(err)
	}
	var kps [][]byte
	if err := db.Update(func(tx *bolt.Tx) (err error) { kps, err = s.Refill(tx, 1); return err }); err != nil || len(kps) == 0 {
		t.Fatalf("KeyPackage: %v", err)
	}
	return kps[0]
}
