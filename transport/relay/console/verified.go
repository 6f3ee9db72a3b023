package console

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// DefaultVerified is how many verdicts NewVerified keeps when asked for
// none: two (a status and a pulse) for each of 32,768 devices.
const DefaultVerified = 1 << 16

// Verified remembers what verifying a device's signed status or pulse
// gave, keyed by the SHA-256 of the document's bytes and the DID it must
// be signed by, so that a view of the fleet verifies each document once
// rather than at every request. A verdict depends on nothing else (no
// clock, no store), so a remembered one is the one verifying again would
// give; a document another relay writes is new bytes, verified anew. It
// keeps at most its bound of verdicts, forgetting an arbitrary one for
// each new one beyond it. Safe for concurrent use; the nil *Verified
// verifies every time.
type Verified struct {
	mu  sync.Mutex
	max int
	m   map[[sha256.Size]byte]verdict
}

// verdict is one document's outcome. The payloads are shared between the
// callers that get them, which only read them.
type verdict struct {
	status wire.Status
	pulse  pulse.Pulse
	name   string   // of a card
	tags   []string // of a card
	err    error
}

// NewVerified returns a cache of at most max verdicts (DefaultVerified
// when max <= 0).
func NewVerified(max int) *Verified {
	if max <= 0 {
		max = DefaultVerified
	}
	return &Verified{max: max, m: map[[sha256.Size]byte]verdict{}}
}

// Len is how many verdicts v holds.
func (v *Verified) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.m)
}

// Status is VerifyStatus(b, agent), remembered.
func (v *Verified) Status(b []byte, agent string) (wire.Status, error) {
	r := v.get('s', b, agent, func() (r verdict) {
		id, err := did.Parse(agent)
		if err != nil {
			return verdict{err: fmt.Errorf("status: %v", err)}
		}
		r.status, r.err = VerifyStatus(b, id)
		return r
	})
	return r.status, r.err
}

// Pulse parses and verifies a pulse of agent (pulse.Parse, and its Agent
// must be agent), remembered.
func (v *Verified) Pulse(b []byte, agent string) (pulse.Pulse, error) {
	r := v.get('p', b, agent, func() (r verdict) {
		r.pulse, r.err = pulse.Parse(b)
		if r.err == nil && r.pulse.Agent.String() != agent {
			r.err = errors.New("signed by another DID")
		}
		return r
	})
	return r.pulse, r.err
}

// Card is cardInfo(b), remembered: the name and the skills' tags of an
// Agent Card (not a verdict on a signature, but as costly to read again).
func (v *Verified) Card(b []byte) (name string, tags []string) {
	r := v.get('c', b, "", func() (r verdict) {
		r.name, r.tags = cardInfo(b)
		return r
	})
	return r.name, r.tags
}

// get returns the verdict on the document of kind b for agent, computing
// it with verify when v has none.
func (v *Verified) get(kind byte, b []byte, agent string, verify func() verdict) verdict {
	if v == nil {
		return verify()
	}
	h := sha256.New()
	h.Write([]byte{kind})
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write(b)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	v.mu.Lock()
	r, ok := v.m[key]
	v.mu.Unlock()
	if ok {
		return r
	}
	r = verify()
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.m {
		if len(v.m) < v.max {
			break
		}
		delete(v.m, k)
	}
	v.m[key] = r
	return r
}
