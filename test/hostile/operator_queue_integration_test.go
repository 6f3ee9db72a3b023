//go:build integration

package hostile

import (
	"regexp"
	"strings"
	"testing"
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
	opKey, malloryKey := writeKey(t, op), writeKey(t, mallory)
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
