//go:build integration

package hostile

import (
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Device names and the other text a device publishes for operators to
// read, against the real torpor-agent and torpor-relay: a name with a
// bidirectional or invisible control character (package internal/safetext)
// is refused where it enters; where one is shown it is neutralised
// (console.TestDeviceTextNeutralised, torporctl's TestFleetTableNeutralised).

// hiddenNames are names that read otherwise than they are.
var hiddenNames = map[string]string{
	"right-to-left override": "pump\u202E1-tsae",
	"first strong isolate":   "pump\u2068east",
	"zero-width space":       "pump\u200B1",
	"byte order mark":        "\uFEFFpump-1",
	"escape sequence":        "pump\x1b[8m1",
}

// TestDeviceNameHiddenCharacters: the agent refuses such a name in its
// configuration (exit 1, the character named, no store made); the relay
// refuses a card that names its agent so, and a signed status whose board
// or version carries one, and keeps the state published before.
func TestDeviceNameHiddenCharacters(t *testing.T) {
	for what, name := range hiddenNames {
		t.Run("agent config "+what, func(t *testing.T) {
			d := agNewDevice(t)
			d.writeConfig(`{"version": 1}`)
			d.run(d.args("--name", name)...).want(t, 1, "name: character U+")
			if exists(d.db) {
				t.Fatal("a refused name made a store")
			}
		})
	}
	r := startRelay(t)
	for what, name := range hiddenNames {
		t.Run("card "+what, func(t *testing.T) {
			dev := freshKey(t)
			if err := publishNamed(t, r.URL, dev, "pump-1", nil); err != nil {
				t.Fatalf("a plain name: %v", err)
			}
			err := publishNamed(t, r.URL, dev, name, nil)
			if err == nil || !strings.Contains(err.Error(), "card: name: character U+") {
				t.Fatalf("card named %q: %v, want refused with the character named", name, err)
			}
			a := do(t, "GET", r.URL+"/a/"+dev.DID().String()+"/.well-known/agent-card.json", nil, nil)
			if a.Status != 200 || !strings.Contains(string(a.Body), `"name":"pump-1"`) {
				t.Fatalf("the card published before: %s", a)
			}
		})
	}
	t.Run("status board and version", func(t *testing.T) {
		dev := freshKey(t)
		for _, st := range []wire.Status{{Version: "v1.2\u202E", Board: "pi5"}, {Version: "v1.2", Board: "pi\u20665"}} {
			err := publishNamed(t, r.URL, dev, "pump-1", &st)
			if err == nil || !strings.Contains(err.Error(), "status: ") || !strings.Contains(err.Error(), "character U+") {
				t.Fatalf("status %+v: %v, want refused with the character named", st, err)
			}
		}
	})
}

// publishNamed links dev and publishes a sleep-mode state with a card
// named name (and the signed status st, unless nil), and returns the
// publish error.
func publishNamed(t *testing.T, url string, dev *did.PrivateKey, name string, st *wire.Status) error {
	t.Helper()
	c, ctx := relaytest.Dial(t, url, dev)
	defer c.Close()
	b := c.Hello()
	state := wire.State{Mode: "sleep", Card: relaytest.SignedCard(t, url, dev, a2a.CardOptions{Name: name, OfflineMode: "sleep", Bounds: &b})}
	if st != nil {
		o, err := governed.Sign(dev, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: wire.StatusSchema},
			Purpose: wire.PurposeStatus, Payload: st})
		if err != nil {
			t.Fatal(err)
		}
		if state.Status, err = o.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Publish(ctx, state)
	return err
}
