package runtime

import (
	"bytes"
	"strings"

	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// cardKey is what the agent's card depends on that may change while the
// agent runs: the offline-delivery mode and the bounds in force. The rest
// (name, base URL, policy, envelope) is its configuration's.
type cardKey struct {
	mode   wake.Mode
	bounds queuebounds.Bounds
}

// signedCard is a card the agent signed, with what it was signed for and
// its wire.CardDigest.
type signedCard struct {
	key    cardKey
	raw    []byte
	digest []byte
}

// card returns the Agent Card for mode with the bounds in force under
// ceiling, signed, and its wire.CardDigest. The card names nothing that
// changes from wake to wake (the pulse and the next window are the
// pulse's, served at a2a.PulsePath, and the relay's answers'), so the card
// signed for the same mode and bounds is kept and returned again: an
// agent signs a card when one of them changes, not every wake.
func (a *Agent) card(mode wake.Mode, ceiling queuebounds.Bounds) ([]byte, []byte, error) {
	key := cardKey{mode: mode, bounds: ceiling.Clamp(&a.cfg.Relay.Bounds)}
	a.mu.Lock()
	kept := a.signed
	a.mu.Unlock()
	if kept.raw != nil && kept.key == key {
		return kept.raw, kept.digest, nil
	}
	name := a.cfg.Name
	if name == "" {
		name = "torpor-agent"
	}
	c, err := a2a.BuildCard(a2a.CardOptions{
		Name:        name,
		BaseURL:     strings.TrimRight(a.cfg.Relay.URL, "/") + "/a/" + a.cfg.Key.DID().String(),
		OfflineMode: string(mode),
		Bounds:      &key.bounds,
		Policy:      &a2a.Policy{Plaintext: a.cfg.AllowPlaintext},
		// The device verifies presented passports (docs/envelope.md).
		Envelope: a2a.DefaultEnvelopeParams(),
	})
	if err != nil {
		return nil, nil, err
	}
	raw, err := a2a.SignCard(c, a.cfg.Key)
	if err != nil {
		return nil, nil, err
	}
	digest := wire.CardDigest(raw)
	a.mu.Lock()
	a.signed = signedCard{key: key, raw: raw, digest: digest}
	a.mu.Unlock()
	return raw, digest, nil
}

// relayHolds reports whether the relay said, in its last state-ok, that it
// holds the card whose digest is digest.
func (a *Agent) relayHolds(digest []byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.relayCard != nil && bytes.Equal(a.relayCard, digest)
}

// heldKnown returns the wire.HeldDigest of the last Held the relay named;
// nil before one.
func (a *Agent) heldKnown() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.knownHeld
}

// learnHeld records held, the Held of a state-ok; nil (not said) keeps
// what the agent knew.
func (a *Agent) learnHeld(held *wire.Held) {
	if held == nil {
		return
	}
	d := wire.HeldDigest(held)
	a.mu.Lock()
	a.knownHeld = d
	a.mu.Unlock()
}

// setRelayCard records the card digest of the relay's last state-ok:
// nil when it named none (a relay that predates the member, or one that
// holds no card), so that the next state sends the card.
func (a *Agent) setRelayCard(digest []byte) {
	a.mu.Lock()
	a.relayCard = digest
	a.mu.Unlock()
}
