//go:build integration

package hostile

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestFreeIdentitiesCannotFillTheRelay: made-up DIDs (free to make) fill
// only the probation pool: ten of them against --probation-agents 5 get
// five states and five 507 relay_full_probation, while --max-agents 2
// still has room for an admitted device; their senders' junk fills only
// --probation-queue-bytes, and the admitted device's senders are still
// queued. (Before the pool, made-up devices counted against --max-agents
// and --max-queue-bytes: a new admitted device got 507
// relay_full_agents.)
func TestFreeIdentitiesCannotFillTheRelay(t *testing.T) {
	s := newSleeper(t, 1, "--max-agents", "2", "--probation-agents", "5", "--probation-queue-bytes", "3000", "--max-queue-bytes", "100000")
	refused := 0
	var made []string
	for range 10 {
		k := freshKey(t)
		_, err := publishState(t, s.relay.URL, k, wire.State{Mode: "sleep"})
		switch {
		case err == nil:
			made = append(made, k.DID().String())
		case strings.Contains(err.Error(), "507") && strings.Contains(err.Error(), "relay_full_probation"):
			refused++
		default:
			t.Fatalf("a made-up device: %v, want linked or 507 relay_full_probation", err)
		}
	}
	if len(made) != 5 || refused != 5 {
		t.Fatalf("10 made-up devices with --probation-agents 5: %d stored, %d refused; want 5 and 5", len(made), refused)
	}
	full := 0
	for i, agent := range made {
		for j := range 4 {
			a := send(t, s.relay.URL, agent, freshKey(t), "1.0", message(`"junk-`+string(rune('a'+i))+string(rune('a'+j))+`"`, wirePart(strings.Repeat("j", 400))))
			if a.Status == http.StatusInsufficientStorage && strings.Contains(string(a.Body), "--probation-queue-bytes") {
				full++
			}
		}
	}
	if full == 0 {
		t.Errorf("20 junk messages of 400 bytes never reached --probation-queue-bytes 3000")
	}
	admitted := freshKey(t)
	admit(t, s.relay.URL, harnessOperator(t), admitted)
	if _, err := publishState(t, s.relay.URL, admitted, wire.State{Mode: "sleep"}); err != nil {
		t.Fatalf("an admitted device after the made-up ones: %v, want it linked", err)
	}
	for _, dev := range []string{s.dev.DID().String(), admitted.DID().String()} {
		a := send(t, s.relay.URL, dev, s.sender, "1.0", message(`"genuine"`, wirePart("hello")))
		if a.Status != http.StatusServiceUnavailable || a.JSON()["queued"] != true {
			t.Errorf("a genuine sender to an admitted device after the junk: %s, want 503 queued", a)
		}
	}
}

// TestProbationLinksCannotHoldTheRelay: with --max-conns 64, devices on
// probation hold at most --probation-links (16 by default) of them; the
// rest get 503 probation_links_full, /healthz answers 200 and an admitted
// device links. (Before, 63 links of made-up DIDs were held and /healthz
// got 503.)
func TestProbationLinksCannotHoldTheRelay(t *testing.T) {
	s := newSleeper(t, 0, "--max-conns", "64")
	held, refused := 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 63 {
		c, err := link.Dial(ctx, link.Config{RelayURL: s.relay.URL, Key: freshKey(t)})
		switch {
		case err == nil:
			held++
			t.Cleanup(func() { c.Close() })
		case strings.Contains(err.Error(), "503") && strings.Contains(err.Error(), "probation_links_full"):
			refused++
		default:
			t.Fatalf("a made-up device's link: %v", err)
		}
	}
	if held != 16 || refused != 47 {
		t.Errorf("63 links on probation with --max-conns 64: %d held, %d refused; want 16 and 47", held, refused)
	}
	if a := do(t, "GET", s.relay.URL+"/healthz", nil, nil); a.Status != 200 {
		t.Errorf("/healthz with the probation links held: %s, want 200", a)
	}
	publish(t, s.relay.URL, s.dev, "sleep") // the admitted device links
}
