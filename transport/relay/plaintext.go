package relay

import (
	"hash/maphash"
	"sync"

	"github.com/torpor-dev/torpor/transport/a2a"
)

// plaintextPolicy remembers, per agent, whether its card refuses
// unencrypted objects (a2a.RefusesPlaintext), with a digest of the card
// it read that from: parsing the 3 KB card was a sixth of the CPU of an
// asleep answer to a plaintext send (test/relay BenchmarkAnswerPath). A
// new card is read again. The zero value is ready to use.
type plaintextPolicy struct {
	mu sync.Mutex
	// mu guards the following fields.
	seed maphash.Seed
	m    map[string]policyEntry // agent DID -> its card's policy
}

type policyEntry struct {
	card    uint64 // maphash of the card
	refuses bool
}

// refuses reports whether card, agent's signed card, refuses plaintext.
func (p *plaintextPolicy) refuses(agent string, card []byte) bool {
	p.mu.Lock()
	if p.m == nil {
		p.seed, p.m = maphash.MakeSeed(), map[string]policyEntry{}
	}
	seed := p.seed
	e, ok := p.m[agent]
	p.mu.Unlock()
	h := maphash.Bytes(seed, card)
	if ok && e.card == h {
		return e.refuses
	}
	r := a2a.RefusesPlaintext(card)
	p.mu.Lock()
	p.m[agent] = policyEntry{card: h, refuses: r}
	p.mu.Unlock()
	return r
}
