package console

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// DefaultVerified is how many verdicts NewVerified keeps when asked for
// none: a status, a pulse and a card for each of 21,845 devices.
const DefaultVerified = 1 << 16

// maxVerifiedBytes bounds the documents a Verified keeps.
const maxVerifiedBytes = 64 << 20

// Verified remembers what verifying a device's signed status or pulse
// gave (and what its Agent Card says), keyed by the document's kind and
// the DID it must be signed by, beside the exact bytes it judged, so that
// a view of the fleet verifies each document once rather than at every
// request. A verdict is used only for the same bytes (a new status is
// verified anew, whoever wrote it) and depends on nothing else (no clock,
// no store), so a remembered one is the one verifying again would give.
// Comparing the bytes costs little: store/agents.Bolt hands out the same
// slice while a record is unchanged, which bytes.Equal sees at once. It
// keeps at most its bound of verdicts and 64 MiB of documents, forgetting
// arbitrary ones to make room. Safe for concurrent use; the nil
// *Verified verifies every time.
type Verified struct {
	mu    sync.Mutex
	max   int
	bytes int
	m     map[docKey]verdict
}

// docKey names a document: its kind and the DID it is of.
type docKey struct {
	kind  byte
	agent string
}

// verdict is one document's outcome. The payloads are shared between the
// callers that get them, which only read them; so is doc, which no one
// modifies (store/agents.Store.Get's State).
type verdict struct {
	doc    []byte
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
	return &Verified{max: max, m: map[docKey]verdict{}}
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
func (v *Verified) Card(b []byte, agent string) (name string, tags []string) {
	r := v.get('c', b, agent, func() (r verdict) {
		r.name, r.tags = cardInfo(b)
		return r
	})
	return r.name, r.tags
}

// get returns the verdict on agent's document of kind b, computing it
// with verify when v has none for these bytes.
func (v *Verified) get(kind byte, b []byte, agent string, verify func() verdict) verdict {
	if v == nil {
		return verify()
	}
	key := docKey{kind, agent}
	v.mu.Lock()
	r, ok := v.m[key]
	v.mu.Unlock()
	if ok && bytes.Equal(r.doc, b) && (r.doc == nil) == (b == nil) {
		return r
	}
	r = verify()
	r.doc = b
	if len(b) > maxVerifiedBytes/1024 {
		return r
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.drop(key)
	for k := range v.m {
		if len(v.m) < v.max && v.bytes+len(b) <= maxVerifiedBytes {
			break
		}
		v.drop(k)
	}
	v.m[key] = r
	v.bytes += len(b)
	return r
}

func (v *Verified) drop(key docKey) {
	if r, ok := v.m[key]; ok {
		v.bytes -= len(r.doc)
		delete(v.m, key)
	}
}
