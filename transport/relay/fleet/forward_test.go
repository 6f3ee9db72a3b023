package fleet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
)

// TestLiveRequestThroughAnotherRelay: a device linked to relay A answers
// a live request that relay B took, forwarded over NATS; with no device
// linked anywhere B queues instead.
func TestLiveRequestThroughAnotherRelay(t *testing.T) {
	run := startFleet(t, 2)
	urls := run.urls
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 2)
	c := run.linkDevice(t, 0, dev, "always_on")
	status, body := post(t, urls[1], dev, sender)
	if status != 200 || string(body) != `{"from":"`+sender.DID().String()+`"}` {
		t.Fatalf("live request through relay B = %d %s, want 200 and the device's answer naming the sender", status, body)
	}
	c.Close() // relay B may still see the link up: the forward then finds none and B queues
	if status, body := post(t, urls[1], dev, sender); status != 503 || !strings.Contains(string(body), `"queued":true`) {
		t.Errorf("request with the device unlinked = %d %s, want 503 queued", status, body)
	}
}

// TestQueuedNoticeThroughAnotherRelay: a sleeping device linked to relay
// A hears at once of a record relay B queued.
func TestQueuedNoticeThroughAnotherRelay(t *testing.T) {
	run := startFleet(t, 2)
	urls := run.urls
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 2)
	c := run.linkDevice(t, 0, dev, "sleep")
	if status, body := post(t, urls[1], dev, sender); status != 503 || !strings.Contains(string(body), `"queued":true`) {
		t.Fatalf("request for a sleeping device = %d %s, want 503 queued", status, body)
	}
	select {
	case seq := <-c.Queued():
		if seq != 1 {
			t.Errorf("queued notice for seq %d, want 1", seq)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no queued notice on relay A for a record relay B queued")
	}
}

// TestNewerLinkFencesOlder: when the device links again through relay B,
// relay A drops its link, and a request through A reaches the device on B.
func TestNewerLinkFencesOlder(t *testing.T) {
	run := startFleet(t, 2)
	urls := run.urls
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 2)
	old := run.linkDevice(t, 0, dev, "always_on")
	run.linkDevice(t, 1, dev, "always_on")
	select {
	case <-old.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("relay A kept the older link after the device linked through relay B")
	}
	if status, body := post(t, urls[0], dev, sender); status != 200 {
		t.Errorf("live request through relay A after the relink = %d %s, want 200 from the device on B", status, body)
	}
}

// TestUpWithoutView: a relay whose presence view cannot tell (its watch
// ended) asks the fleet with the `up` request instead: a live request it
// takes reaches the device linked to the other relay, and a record it
// queues for a device linked nowhere costs the question and the publish.
func TestUpWithoutView(t *testing.T) {
	run := startFleet(t, 2)
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 2)
	c := run.linkDevice(t, 0, dev, "always_on")
	run.links[1].Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, known := run.links[1].Up(dev.DID().String()); !known {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("relay B's view still knows after its watch was stopped")
		}
		time.Sleep(2 * time.Millisecond) // the watch ends on its own goroutine
	}
	if status, body := post(t, run.urls[1], dev, sender); status != 200 {
		t.Fatalf("live request through relay B without its view = %d %s, want 200 from the device on A", status, body)
	}
	c.Close()
	sleeper := didtest.Key(t, 3)
	linkDevice(t, run.urls[0], sleeper, "sleep").Close()
	sent := func() uint64 { run.conns[1].Flush(); return run.conns[1].Stats().OutMsgs }
	for i := range 3 {
		before := sent()
		if status, body := post(t, run.urls[1], sleeper, sender); status != 503 || !strings.Contains(string(body), `"queued":true`) {
			t.Fatalf("request for a sleeping device = %d %s, want 503 queued", status, body)
		}
		if got := sent() - before; i > 0 && got != 2 {
			t.Errorf("request %d: relay B sent %d NATS messages without its view, want 2 (up, the publish)", i, got)
		}
	}
}
