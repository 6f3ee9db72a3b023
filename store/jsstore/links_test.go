package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store/jsstore"
)

// TestLinks: relay B's presence view follows the keys relay A writes for
// the links it holds, through the watch: a key A holds shows up at B, not
// at A itself (A knows its own links); A's release takes it away; a key
// held when B starts watching is in B's first view. A view whose watch
// stopped says it does not know.
func TestLinks(t *testing.T) {
	srv := single(t)
	a, b := open(t, srv), open(t, srv)
	t.Cleanup(func() { a.Close(); b.Close() })
	testLinks(t, a, b)
}

func testLinks(t *testing.T, a, b *jsstore.Conn) {
	t.Helper()
	ctx := context.Background()
	la, err := a.Links("RELAYA")
	if err != nil {
		t.Fatal(err)
	}
	const early, agent = "did:key:zEarly", "did:key:zLinked"
	if err := la.Hold(ctx, early); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Links("RELAYB")
	if err != nil {
		t.Fatal(err)
	}
	waitLinks(t, lb, early, true, "a key written before the watch started")
	if up, known := lb.Up(agent); !known || up {
		t.Fatalf("B's view of a device linked nowhere = up %v known %v, want down and known", up, known)
	}
	if err := la.Hold(ctx, agent); err != nil {
		t.Fatal(err)
	}
	waitLinks(t, lb, agent, true, "A's new key")
	waitLinks(t, la, agent, false, "A's own key, in A's view")
	if err := la.Hold(ctx, agent); err != nil { // a refresh
		t.Fatal(err)
	}
	if err := la.Release(ctx, agent); err != nil {
		t.Fatal(err)
	}
	waitLinks(t, lb, agent, false, "A's released key")
	waitLinks(t, lb, early, true, "the other key, still held")
	lb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for _, known := lb.Up(early); known; _, known = lb.Up(early) {
		if time.Now().After(deadline) {
			t.Fatal("a view whose watch stopped still says it knows")
		}
		time.Sleep(2 * time.Millisecond) // the watch ends on its own goroutine
	}
}

// waitLinks waits until l's view says up for agent.
func waitLinks(t *testing.T, l *jsstore.Links, agent string, up bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, known := l.Up(agent); known && got == up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the view never said up=%v", what, up)
		}
		time.Sleep(2 * time.Millisecond) // the watch delivers on its own goroutine
	}
}

// TestLinksForgetUnrefreshed: a key the watch has not delivered again for
// LinkKeyTTL no longer counts (its relay stopped refreshing it; its
// removal marker may be gone), on the view's clock; a refresh brings it
// back.
func TestLinksForgetUnrefreshed(t *testing.T) {
	srv := single(t)
	ctx := context.Background()
	clk := clocktest.New(time.Now())
	b, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, srv)
	t.Cleanup(func() { a.Close(); b.Close() })
	la, err := a.Links("RELAYA")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Links("RELAYB")
	if err != nil {
		t.Fatal(err)
	}
	const agent = "did:key:zQuiet"
	if err := la.Hold(ctx, agent); err != nil {
		t.Fatal(err)
	}
	waitLinks(t, lb, agent, true, "A's key")
	clk.Advance(jsstore.LinkKeyTTL - time.Second)
	waitLinks(t, lb, agent, true, "A's key before its TTL")
	clk.Advance(time.Second)
	waitLinks(t, lb, agent, false, "A's key not refreshed for its TTL")
	if err := la.Hold(ctx, agent); err != nil {
		t.Fatal(err)
	}
	waitLinks(t, lb, agent, true, "A's refreshed key")
}
