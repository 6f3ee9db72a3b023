package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// presentWorld is a relay stand-in that records the bodies sent to it and
// answers as an awake agent that took the message, the sender's key file,
// and keys for a principal, a delegate, a stranger and the agent.
type presentWorld struct {
	t                              *testing.T
	dir, keyFile                   string
	srv                            *httptest.Server
	mu                             sync.Mutex
	bodies                         [][]byte
	me, principal, mid, other, agt *did.PrivateKey
}

func newPresentWorld(t *testing.T) *presentWorld {
	w := &presentWorld{t: t, dir: t.TempDir()}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies = append(w.bodies, b)
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		rw.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"role":"ROLE_AGENT"}}`))
	}))
	t.Cleanup(w.srv.Close)
	for _, k := range []**did.PrivateKey{&w.me, &w.principal, &w.mid, &w.other, &w.agt} {
		var err error
		if *k, err = did.Generate(nil); err != nil {
			t.Fatal(err)
		}
	}
	w.keyFile = filepath.Join(w.dir, "me.key")
	if err := saveKey(w.keyFile, w.me, false); err != nil {
		t.Fatal(err)
	}
	return w
}

// issue writes a passport from iss to sub for aud granting scope to a
// file and returns its path. Issue does not check a parent: a child wider
// than its parent is written as asked.
func (w *presentWorld) issue(name string, iss, sub, aud *did.PrivateKey, scope string) string {
	w.t.Helper()
	scopes, err := envelope.ParseEnvelope([]byte(scope))
	if err != nil {
		w.t.Fatal(err)
	}
	now := clock.Real.Now()
	tok, err := envelope.Issue(iss, envelope.Claims{Iss: iss.DID().String(), Sub: sub.DID().String(), Aud: aud.DID().String(),
		Iat: now.Unix(), Exp: now.Add(time.Hour).Unix(), Envelope: scopes})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.write(name, tok+"\n")
}

func (w *presentWorld) write(name, s string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// send runs torporctl send --plaintext to the agent with args after the
// message (flags go anywhere) and returns the exit code, output and the
// envelope the request presented, if one was sent.
func (w *presentWorld) send(args ...string) (int, string, *a2a.EnvelopeMetadata) {
	w.t.Helper()
	w.mu.Lock()
	n := len(w.bodies)
	w.mu.Unlock()
	var out bytes.Buffer
	argv := append([]string{"send", "--plaintext", "--key", w.keyFile, "--relay", w.srv.URL, w.agt.DID().String(), "hi"}, args...)
	code := run(context.Background(), argv, &out, &out)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bodies) == n {
		return code, out.String(), nil
	}
	req, err := a2a.ParseRequest(w.bodies[len(w.bodies)-1])
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := a2a.ParseSendMessage(req)
	if err != nil {
		w.t.Fatal(err)
	}
	em, ok, err := a2a.PresentedEnvelope(p.Message.Extensions, p.Message.Metadata)
	if err != nil {
		w.t.Fatalf("the sent message's envelope: %v", err)
	}
	if !ok {
		return code, out.String(), &a2a.EnvelopeMetadata{}
	}
	return code, out.String(), &em
}

const (
	rootScope = `[{"v":"lap-scope-v0","act":"finance:pay","res":"ap2://rails/stripe/**",` +
		`"cap":{"max_per_tx":100,"max_cumulative":1000,"unit":"USD","window":"utc_day"},"depth":2}]`
	narrowScope = `[{"v":"lap-scope-v0","act":"finance:pay:escrow","res":"ap2://rails/stripe/inv/**",` +
		`"cap":{"max_per_tx":50,"max_cumulative":500,"unit":"USD","window":"utc_day"},"depth":1}]`
	wideScope = `[{"v":"lap-scope-v0","act":"finance:pay","res":"ap2://rails/**",` +
		`"cap":{"max_per_tx":50,"max_cumulative":500,"unit":"USD","window":"utc_day"},"depth":1}]`
)

// TestSendPresentsPassports: --passport (repeatable, root first, a flag
// after the arguments too) makes the sent message activate the Autonomy
// Envelope extension and carry the chain, and --pulse the holder's pulse;
// without --passport the message presents nothing.
func TestSendPresentsPassports(t *testing.T) {
	w := newPresentWorld(t)
	root := w.issue("root.jws", w.principal, w.me, w.agt, rootScope)
	code, out, em := w.send("--passport", root)
	tok, _ := readToken(root)
	if code != 0 || em == nil || !slices.Equal(em.Passports, []string{tok}) || em.Pulse != nil {
		t.Fatalf("send --passport: exit %d, presented %+v, output:\n%s", code, em, out)
	}

	rootMid := w.issue("root-mid.jws", w.principal, w.mid, w.agt, rootScope)
	leaf := w.issue("leaf.jws", w.mid, w.me, w.agt, narrowScope)
	doc, err := pulse.Sign(w.me, pulse.Pulse{Agent: w.me.DID(), Seq: 1, At: time.Now().UTC().Truncate(time.Second), Mode: "always_on"})
	if err != nil {
		t.Fatal(err)
	}
	pf := w.write("pulse.json", string(doc)+"\n")
	code, out, em = w.send("--passport", rootMid, "--pulse", pf, "--passport", leaf)
	t1, _ := readToken(rootMid)
	t2, _ := readToken(leaf)
	if code != 0 || em == nil || !slices.Equal(em.Passports, []string{t1, t2}) || string(em.Pulse) != string(doc) {
		t.Fatalf("send with a delegation chain and a pulse: exit %d, presented %+v, output:\n%s", code, em, out)
	}

	if code, out, em = w.send(); code != 0 || em == nil || em.Passports != nil {
		t.Fatalf("send without --passport: exit %d, presented %+v, output:\n%s", code, em, out)
	}
}

// TestSendRefusesABadChain: a chain that does not verify, one for another
// agent, one granted to someone else, and a pulse that is not the
// holder's are refused before anything is sent, naming the file and the
// reason.
func TestSendRefusesABadChain(t *testing.T) {
	w := newPresentWorld(t)
	rootMid := w.issue("root-mid.jws", w.principal, w.mid, w.agt, rootScope)
	wide := w.issue("wide.jws", w.mid, w.me, w.agt, wideScope)
	otherAud := w.issue("other-aud.jws", w.principal, w.me, w.other, rootScope)
	notMine := w.issue("not-mine.jws", w.principal, w.other, w.agt, rootScope)
	stray := w.issue("stray.jws", w.other, w.me, w.agt, narrowScope)
	mine := w.issue("mine.jws", w.principal, w.me, w.agt, rootScope)
	otherPulse, _ := pulse.Sign(w.other, pulse.Pulse{Agent: w.other.DID(), Seq: 1, At: time.Now().UTC().Truncate(time.Second), Mode: "sleep"})
	pf := w.write("pulse.json", string(otherPulse))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"widened", []string{"--passport", rootMid, "--passport", wide}, "--passport " + wide + " does not verify for " + w.agt.DID().String() + ": passport 1: child scope 0: envelope: child not covered by parent"},
		{"another audience", []string{"--passport", otherAud}, "--passport " + otherAud + " does not verify for " + w.agt.DID().String() + ": passport 0: envelope: passport for another audience"},
		{"wrong holder", []string{"--passport", notMine}, "--passport " + notMine + " is granted to " + w.other.DID().String() + ", not to you (--key is " + w.me.DID().String() + ")"},
		{"broken chain", []string{"--passport", rootMid, "--passport", stray}, "passport 1: envelope: broken delegation chain"},
		{"tampered", []string{"--passport", w.write("bad.jws", "a.b.c")}, "bad.jws does not verify"},
		{"missing file", []string{"--passport", filepath.Join(w.dir, "none.jws")}, "--passport: open "},
		{"pulse alone", []string{"--pulse", pf}, "--pulse goes with --passport"},
		{"another's pulse", []string{"--passport", mine, "--pulse", pf}, "the pulse is " + w.other.DID().String() + "'s, not yours"},
	}
	for _, tt := range tests {
		code, out, em := w.send(tt.args...)
		if code != 1 || em != nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s: exit %d, sent %v, output:\n%s\nwant exit 1, nothing sent, %q", tt.name, code, em != nil, out, tt.want)
		}
	}
}
