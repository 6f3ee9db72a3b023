package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestDeviceAdmit: "device admit" posts to the relay's admission endpoint
// with a DID Bearer token of the operator key for the relay's origin,
// prints the admission, and reports a refusal with the relay's error.
func TestDeviceAdmit(t *testing.T) {
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	opKey := keyFile(t, op)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := (&bearer.Verifier{Audience: srv.URL, Purpose: bearer.OperatorPurpose(r.Method, r.URL.EscapedPath())}).Verify(r.Header.Get("Authorization"))
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/operator/agents/"+dev.DID().String()+"/admit":
			http.Error(w, "wrong request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		case err != nil || id != op.DID():
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":"not_operator","message":"only an operator may admit devices"}`))
		default:
			w.Write([]byte(`{"did":"` + dev.DID().String() + `","admitted":true}`))
		}
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"device", "admit", "--relay", srv.URL, "--key", opKey, dev.DID().String()}, &out, &errb); code != 0 || !strings.Contains(out.String(), "admitted "+dev.DID().String()) {
		t.Fatalf("device admit = %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	other := keyFile(t, didtest.Key(t, 3))
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"device", "admit", "--relay", srv.URL, "--key", other, dev.DID().String()}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "not_operator: only an operator may admit devices") {
		t.Errorf("device admit by a non-operator = %d, stderr %q; want a failure naming not_operator", code, errb.String())
	}
	if code := run(context.Background(), []string{"device", "admit", "--relay", srv.URL, "--key", opKey, "not-a-did"}, &out, &errb); code == 0 {
		t.Error("device admit of a malformed DID succeeded")
	}
}
