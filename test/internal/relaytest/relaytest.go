// Package relaytest runs the real torpor-relay binary for the integration
// tests under test/ and does what a device does on its link in a few
// lines: publish a mode with a signed card, pull the queue.
package relaytest

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Relay is a running torpor-relay.
type Relay struct {
	*testenv.Proc
	URL string // http://127.0.0.1:port, its address
	Dir string // its --data-dir
}

// ListenRE matches the relay's log line that says where it serves.
var ListenRE = regexp.MustCompile(`msg="torpor-relay listening" addr=(\S+)`)

// Start runs torpor-relay on the data directory dir with loopback ports
// chosen by the kernel and extra flags, and waits up to a minute until it
// serves (a relay on JetStream waits for its streams' placement first). It
// is killed when the test ends.
func Start(t testing.TB, dir string, extra ...string) *Relay {
	t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--data-dir", dir, "--log-level", "info"}, extra...)
	p := testenv.Start(t, testenv.Binary(t, "torpor-relay"), args...)
	return &Relay{Proc: p, URL: p.WaitWithin(t, time.Minute, ListenRE)[1], Dir: dir}
}

// Dial links dev to the relay at url as its device; the link is closed
// when the test ends.
func Dial(t testing.TB, url string, dev *did.PrivateKey) (*link.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// Publish links dev, publishes mode ("sleep" queues everything) with a
// signed card whose bounds are those the relay announced, and closes the
// link, so that the relay answers for a device in that mode.
func Publish(t testing.TB, url string, dev *did.PrivateKey, mode string) {
	t.Helper()
	c, ctx := Dial(t, url, dev)
	defer c.Close()
	b := c.Hello()
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "sleeper", BaseURL: url + "/a/" + dev.DID().String(), OfflineMode: mode, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a2a.SignCard(card, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, wire.State{Mode: mode, Card: raw}); err != nil {
		t.Fatal(err)
	}
}

// PullAll links dev and returns every queued record without
// acknowledging any.
func PullAll(t testing.TB, url string, dev *did.PrivateKey) []wire.Record {
	t.Helper()
	c, ctx := Dial(t, url, dev)
	defer c.Close()
	var all []wire.Record
	var after uint64
	for {
		recs, more, err := c.Pull(ctx, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
		if len(recs) == 0 || !more {
			return all
		}
		after = recs[len(recs)-1].Seq
	}
}
