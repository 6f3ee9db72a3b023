package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
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
	keyFile := filepath.Join(t.TempDir(), "me.key")
	if err := saveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	agent, _ := did.Generate(nil)
	var out bytes.Buffer
	argv := append([]string{"send", "--key", keyFile, "--relay", relay}, args...)
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
	if code != 1 || !strings.Contains(out, "rejected: the agent was awake and refused it: -32602 object rejected") {
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
