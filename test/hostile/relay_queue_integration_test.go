//go:build integration

package hostile

import (
	"net/http"
	"strings"
	"testing"
)

// TestRelayQueue: a hostile sender against a sleeping device's queue.
// Every case starts from a device holding accepted messages and ends by
// checking they are all still there, unchanged.
func TestRelayQueue(t *testing.T) {
	s := newSleeper(t, 2)
	mallory := freshKey(t)
	t.Run("no token is not queued", func(t *testing.T) {
		a := send(t, s.relay.URL, s.dev.DID().String(), nil, "1.0", message(`1`, wirePart("x")))
		if a.Status != http.StatusUnauthorized {
			t.Errorf("got %s, want 401", a)
		}
		if now := s.kept(t); len(now) != len(s.before) {
			t.Errorf("%d records queued, want %d", len(now), len(s.before))
		}
	})
	t.Run("body over the size limit", func(t *testing.T) {
		a := s.send(t, mallory, message(`2`, wirePart(strings.Repeat("x", 300<<10))))
		if a.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(a.Body), "message_too_large") {
			t.Errorf("got %s, want 413 message_too_large", a)
		}
		if now := s.kept(t); len(now) != len(s.before) {
			t.Errorf("%d records queued, want %d", len(now), len(s.before))
		}
	})
	t.Run("an MLS Welcome is queued", func(t *testing.T) {
		a := s.send(t, mallory, message(`3`, welcomePart()))
		if a.Status != http.StatusServiceUnavailable || a.json()["queued"] != true {
			t.Errorf("got %s, want 503 queued", a)
		}
		if now := s.kept(t); len(now) != len(s.before)+1 {
			t.Errorf("%d records queued, want %d", len(now), len(s.before)+1)
		}
	})
}
