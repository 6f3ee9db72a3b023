package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// presentArgs are send's flags that present an Autonomy Envelope
// (docs/envelope.md, "The extension").
type presentArgs struct {
	passports []string // files, root first
	pulse     string
}

func (p *presentArgs) register(fs *flag.FlagSet) {
	fs.Func("passport", "A file holding one passport (a compact JWS) of the chain to present, root first; repeat it for a delegation chain. "+
		"The chain must verify for the agent now and its last passport be granted to --key.", func(s string) error {
		p.passports = append(p.passports, s)
		return nil
	})
	fs.StringVar(&p.pulse, "pulse", "", "A file holding your latest signed pulse (JSON), presented with the --passport chain; optional.")
}

// envelope reads the chain and the pulse and checks them before anything
// crosses the network: every passport verifies for agent at the clock's
// time, each attenuates its parent, the last one is granted to key, and
// the pulse is key's. It returns nil when no --passport was given. Errors
// name the file at fault.
func (p *presentArgs) envelope(key *did.PrivateKey, agent did.DID, clk clock.Clock) (*a2a.EnvelopeMetadata, error) {
	if len(p.passports) == 0 {
		if p.pulse != "" {
			return nil, errors.New("--pulse goes with --passport: a pulse alone presents nothing")
		}
		return nil, nil
	}
	if n := len(p.passports); n > a2a.MaxPassports {
		return nil, fmt.Errorf("%d --passport files; a message carries at most %d", n, a2a.MaxPassports)
	}
	em := &a2a.EnvelopeMetadata{}
	for _, f := range p.passports {
		tok, err := readToken(f)
		if err != nil {
			return nil, fmt.Errorf("--passport: %w", err)
		}
		em.Passports = append(em.Passports, tok)
	}
	if err := verifyPresented(em.Passports, p.passports, key.DID(), agent, clk); err != nil {
		return nil, err
	}
	if p.pulse != "" {
		b, err := os.ReadFile(p.pulse)
		if err != nil {
			return nil, fmt.Errorf("--pulse: %w", err)
		}
		doc := []byte(strings.TrimSpace(string(b)))
		pl, err := pulse.Parse(doc)
		if err != nil {
			return nil, fmt.Errorf("--pulse %s: %w", p.pulse, err)
		}
		if pl.Agent != key.DID() {
			return nil, fmt.Errorf("--pulse %s: the pulse is %s's, not yours (--key is %s)", p.pulse, pl.Agent, key.DID())
		}
		em.Pulse = doc
	}
	return em, nil
}

// verifyPresented verifies chain (read from files) as the agent will
// (Registry.VerifyChain), naming the first file whose passport fails, and
// requires the last passport to be granted to holder.
func verifyPresented(chain, files []string, holder, agent did.DID, clk clock.Clock) error {
	reg := envelope.RegistryV0()
	var claims []envelope.Claims
	for i := range chain {
		var err error
		if claims, err = reg.VerifyChain(chain[:i+1], agent.String(), clk); err != nil {
			return fmt.Errorf("--passport %s does not verify for %s: %w", files[i], agent, err)
		}
	}
	last := len(claims) - 1
	if leaf := claims[last]; leaf.Sub != holder.String() {
		return fmt.Errorf("--passport %s is granted to %s, not to you (--key is %s): the last passport of the chain must be yours", files[last], leaf.Sub, holder)
	}
	return nil
}
