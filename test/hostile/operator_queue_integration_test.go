//go:build integration

package hostile

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestOperatorPurge: a sender floods a device's queue with messages the
// device takes; only an operator of the relay (--operator) can list and
// purge them with torporctl queue, one sender's or all, and the purge is
// logged. Nobody else can, and nothing else is removed.
func TestOperatorPurge(t *testing.T) {
	op := key(t, 9)
	s := newSleeper(t, 2, "--operator", op.DID().String())
	mallory := freshKey(t)
	for i := range 3 {
		if a := s.send(t, mallory, message(`"spam-`+string(rune('a'+i))+`"`, wirePart("spam"))); a.Status != 503 {
			t.Fatalf("spam %d: %s", i, a)
		}
	}
	spammed := queued(t, s.relay.URL, s.dev)
	opKey, malloryKey := testenv.KeyFile(t, op), testenv.KeyFile(t, mallory)
	queue := func(sub string, flags ...string) (string, string, error) {
		return ctl(t, append(append([]string{"queue"}, flags...), "--relay", s.relay.URL, "--agent", s.dev.DID().String(), sub)...)
	}
	t.Run("a sender cannot purge", func(t *testing.T) {
		_, stderr, err := queue("purge", "--key", malloryKey, "--all")
		if err == nil || !strings.Contains(stderr, "403 Forbidden: not_operator") {
			t.Errorf("exit %v, stderr %s; want 403 not_operator", err, stderr)
		}
		if now := assertKept(t, s.relay.URL, s.dev, spammed); len(now) != len(spammed) {
			t.Errorf("%d records, want %d", len(now), len(spammed))
		}
	})
	t.Run("a purge names what it purges", func(t *testing.T) {
		if _, stderr, err := queue("purge", "--key", opKey); err == nil || !strings.Contains(stderr, "purge needs --sender DID or --all") {
			t.Errorf("exit %v, stderr %s; want a usage error", err, stderr)
		}
		assertKept(t, s.relay.URL, s.dev, spammed)
	})
	t.Run("an operator lists", func(t *testing.T) {
		out, stderr, err := queue("list", "--key", opKey, "--sender", mallory.DID().String())
		if err != nil || !strings.Contains(out, "3 records") || strings.Contains(out, "spam") {
			t.Errorf("exit %v\n%s%s\nwant mallory's 3 records without their bodies", err, out, stderr)
		}
	})
	t.Run("an operator purges one sender", func(t *testing.T) {
		out, stderr, err := queue("purge", "--key", opKey, "--sender", mallory.DID().String())
		if err != nil || !strings.Contains(out, "purged 3 records") {
			t.Errorf("exit %v\n%s%s", err, out, stderr)
		}
		if now := s.kept(t); len(now) != len(s.before) {
			t.Errorf("%d records after the purge, want the %d accepted before the spam", len(now), len(s.before))
		}
		logged := regexp.MustCompile(`msg="queue purged by an operator" .*operator=` + op.DID().String() + ` agent=` + s.dev.DID().String() + ` records="sender ` + mallory.DID().String() + `" purged=3`)
		s.relay.Wait(t, logged)
	})
	t.Run("an operator purges all", func(t *testing.T) {
		out, stderr, err := queue("purge", "--key", opKey, "--all")
		if err != nil || !strings.Contains(out, "purged 2 records") {
			t.Errorf("exit %v\n%s%s", err, out, stderr)
		}
		if now := queued(t, s.relay.URL, s.dev); len(now) != 0 {
			t.Errorf("%d records after purging all", len(now))
		}
		if a := s.send(t, s.sender, message(`"after"`, wirePart("hello"))); a.Status != 503 || a.JSON()["queued"] != true {
			t.Errorf("a message after the purge: %s, want 503 queued", a)
		}
	})
}

// TestOperatorTokens: the operator endpoints take only an operator token
// of their own purpose, bound to the request's method and path, once, and
// never from a browser. The operator's ordinary send token (what an older
// torporctl sends) is refused with a 401 that says to upgrade torporctl; a
// token replayed, or minted to list a queue and used to purge it or to
// admit a device, is refused; nothing is purged or admitted by a refused
// request, and torporctl (which mints a token per request) still works.
func TestOperatorTokens(t *testing.T) {
	op := key(t, 9)
	s := newSleeper(t, 2, "--operator", op.DID().String())
	url, agent := s.relay.URL, s.dev.DID().String()
	list, admitPath := "/operator/queue/"+agent, "/operator/agents/"+freshKey(t).DID().String()+"/admit"
	t.Run("an ordinary token gets a clear 401", func(t *testing.T) {
		for _, req := range [][2]string{{"GET", list}, {"DELETE", list + "?all=1"}, {"POST", admitPath}} {
			a := do(t, req[0], url+req[1], http.Header{"Authorization": {"Bearer " + relaytest.Token(t, op, url)}}, nil)
			if a.Status != 401 || !strings.Contains(a.JSON()["message"].(string), "upgrade torporctl") ||
				!strings.Contains(a.Header.Get("WWW-Authenticate"), "single-use operator token") {
				t.Errorf("%s %s with a send token: %s %v, want 401 saying to upgrade torporctl", req[0], req[1], a, a.Header)
			}
		}
		s.kept(t)
	})
	t.Run("a token is spent once", func(t *testing.T) {
		h := operatorAuthAt(t, op, url, "GET", list)
		if a := do(t, "GET", url+list, h, nil); a.Status != 200 || a.JSON()["messages"] != float64(2) {
			t.Fatalf("first use: %s", a)
		}
		if a := do(t, "GET", url+list, h, nil); a.Status != 401 || !strings.Contains(string(a.Body), "already used") {
			t.Errorf("second use: %s, want 401 already used", a)
		}
	})
	t.Run("a token is bound to its method and path", func(t *testing.T) {
		if a := do(t, "DELETE", url+list+"?all=1", operatorAuthAt(t, op, url, "GET", list), nil); a.Status != 401 || !strings.Contains(string(a.Body), "another request") {
			t.Errorf("a list token used to purge: %s, want 401", a)
		}
		if a := do(t, "POST", url+admitPath, operatorAuthAt(t, op, url, "GET", list), nil); a.Status != 401 {
			t.Errorf("a list token used to admit: %s, want 401", a)
		}
		other := "/operator/queue/" + freshKey(t).DID().String()
		if a := do(t, "GET", url+list, operatorAuthAt(t, op, url, "GET", other), nil); a.Status != 401 {
			t.Errorf("a token for another device's queue: %s, want 401", a)
		}
		s.kept(t)
	})
	t.Run("a browser is refused", func(t *testing.T) {
		h := operatorAuthAt(t, op, url, "DELETE", list)
		h.Set("Origin", "https://evil.example")
		if a := do(t, "DELETE", url+list+"?all=1", h, nil); a.Status != 403 || a.JSON()["error"] != "origin_refused" {
			t.Errorf("with an Origin: %s, want 403 origin_refused", a)
		}
		s.kept(t)
	})
	t.Run("torporctl mints a token per request", func(t *testing.T) {
		for range 2 {
			if n := operatorList(t, s.relay, op, agent); n != 2 {
				t.Errorf("torporctl queue list: %d records, want 2", n)
			}
		}
		admit(t, url, op, freshKey(t))
	})
}
