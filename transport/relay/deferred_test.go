package relay

import (
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
)

// TestDeferredSendersLoseReserve: a handshake from a sender the agent's
// last link left records of is queued as an ordinary message; other
// senders, other agents and ordinary messages are untouched, and a link
// that leaves nothing gives the sender the reserve again.
func TestDeferredSendersLoseReserve(t *testing.T) {
	var d deferredSenders
	agent, other := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID()
	mallory, bob := "did:key:mallory", "did:key:bob"
	if k := d.kind(agent.String(), mallory, queue.KindHandshake); k != queue.KindHandshake {
		t.Fatalf("before any link: %v", k)
	}
	d.linkEnded(agent, map[string]int{mallory: 2})
	for _, c := range []struct {
		agent, sender string
		in, want      queue.Kind
	}{
		{agent.String(), mallory, queue.KindHandshake, queue.KindMessage},
		{agent.String(), mallory, queue.KindMessage, queue.KindMessage},
		{agent.String(), bob, queue.KindHandshake, queue.KindHandshake},
		{other.String(), mallory, queue.KindHandshake, queue.KindHandshake},
	} {
		if got := d.kind(c.agent, c.sender, c.in); got != c.want {
			t.Errorf("kind(%s, %s, %v) = %v, want %v", c.agent, c.sender, c.in, got, c.want)
		}
	}
	d.linkEnded(agent, map[string]int{})
	if k := d.kind(agent.String(), mallory, queue.KindHandshake); k != queue.KindHandshake {
		t.Errorf("after a link that left nothing: %v, want the reserve again", k)
	}
}
