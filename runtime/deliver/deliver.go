// Package deliver hands objects the agent accepted to the application, per
// purpose, and reports what the application made of them.
//
// Three hand-offs exist, chosen per purpose pattern in the agent's
// configuration:
//
//   - Exec runs a program with the delivery as JSON on its standard input.
//     Exit status 0 is success; what the program writes to standard output
//     (up to 64 KiB) is the receipt. The simplest integration there is, and
//     the process boundary keeps a misbehaving handler from taking the agent
//     down.
//   - Unix POSTs the delivery as JSON over HTTP to a Unix domain socket. A
//     2xx status is success and the response body is the receipt. For
//     applications that are already long-running services.
//   - MQTT publishes the delivery on a topic (QoS 1: success is the broker's
//     PUBACK). For applications that already sit on a message bus. The
//     client is behind the Publisher interface, so tests run it against an
//     embedded broker and deployments against any MQTT 5 broker.
//
// Every handler returns an Outcome, which the agent records. A receipt that
// is a JSON object with a string member "effectId" names the effect at its
// system of record; the agent's idempotency ledger keeps it for
// reconciliation (see store/ledger).
//
// # Did it run?
//
// For a consequential action the agent must know whether the effect may
// have happened. A handler returns an error wrapping ErrNotStarted only when
// the application certainly did not see the delivery (the program could not
// be started, the socket refused the connection, the broker connection is
// down); the agent may then release the idempotency key. Any other error
// means the application may have acted, and the key stays reserved.
package deliver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store/ledger"
)

// ErrNotStarted is wrapped by handler errors when the application certainly
// did not receive the delivery. It is the ledger's sentinel, so ledger.Do
// releases the key of such an effect.
var ErrNotStarted = ledger.ErrNotStarted

// maxReceipt caps what the agent keeps of a handler's answer.
const maxReceipt = 64 << 10

// Delivery is one accepted object, as the application receives it (JSON).
type Delivery struct {
	// Object is the Governed Object exactly as received.
	Object json.RawMessage `json:"object"`
	// ObjectID, Issuer and Purpose repeat the object's id, issuerDid and
	// governance.purpose, so simple handlers need not parse it.
	ObjectID string `json:"objectId"`
	Issuer   string `json:"issuer"`
	Purpose  string `json:"purpose"`
	// Sender is the DID that transmitted the object: the MLS sender's
	// credential identity, or for unencrypted carriage the DID proven by
	// the relay's transport token.
	Sender string `json:"sender,omitempty"`
	// Seq is the relay queue sequence number of the record it came in
	// (zero for live requests).
	Seq uint64 `json:"seq,omitempty"`
	// DequeuedAt is the wall-clock time at which the agent validated it.
	DequeuedAt time.Time `json:"dequeuedAt"`
	// IdempotencyKey is set for consequential actions: the ledger key
	// under which the effect runs. Handlers pass it to their system of
	// record where it accepts one.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Attempt counts deliveries of this object; above 1 only with
	// at-least-once notify after a crash.
	Attempt int `json:"attempt,omitempty"`
}

// Outcome is what a handler made of a delivery.
type Outcome struct {
	Handler  string        `cbor:"1,keyasint" json:"handler"`
	OK       bool          `cbor:"2,keyasint" json:"ok"`
	Detail   string        `cbor:"3,keyasint,omitempty" json:"detail,omitempty"` // exit status, HTTP status, error text
	EffectID string        `cbor:"4,keyasint,omitempty" json:"effectId,omitempty"`
	Receipt  []byte        `cbor:"5,keyasint,omitempty" json:"receipt,omitempty"`
	Duration time.Duration `cbor:"6,keyasint" json:"duration"`
}

// Handler hands a delivery to the application.
type Handler interface {
	// Deliver hands d over and returns the outcome. It returns an error
	// when the hand-off itself failed (not when the application declined
	// the object, which is an Outcome with OK false); the error wraps
	// ErrNotStarted when the application certainly did not receive d.
	Deliver(ctx context.Context, d Delivery) (Outcome, error)
}

// HandlerFunc adapts a function to Handler (for applications embedded in
// the agent's process, and tests).
type HandlerFunc func(ctx context.Context, d Delivery) (Outcome, error)

// Deliver implements Handler.
func (f HandlerFunc) Deliver(ctx context.Context, d Delivery) (Outcome, error) { return f(ctx, d) }

// Route sends the purposes matching Pattern to Handler.
type Route struct {
	Pattern string
	Name    string // handler name, for logs and outcomes
	Handler Handler
}

// Router picks the handler for a purpose: the first route whose pattern
// matches, in configuration order.
type Router struct {
	routes []Route
}

// NewRouter checks every route's pattern and returns a router.
func NewRouter(routes ...Route) (*Router, error) {
	for _, r := range routes {
		if err := purpose.CheckPattern(r.Pattern); err != nil {
			return nil, err
		}
		if r.Handler == nil {
			return nil, fmt.Errorf("deliver: route %q has no handler", r.Pattern)
		}
	}
	return &Router{routes: append([]Route(nil), routes...)}, nil
}

// Lookup returns the route for purpose p, or false when none matches.
func (r *Router) Lookup(p string) (Route, bool) {
	if r == nil {
		return Route{}, false
	}
	for _, rt := range r.routes {
		if purpose.Match(rt.Pattern, p) {
			return rt, true
		}
	}
	return Route{}, false
}

// Deliver hands d to the handler for its purpose and stamps the outcome
// with the handler's name. It returns an error wrapping ErrNoRoute when no
// route matches.
func (r *Router) Deliver(ctx context.Context, d Delivery) (Outcome, error) {
	rt, ok := r.Lookup(d.Purpose)
	if !ok {
		return Outcome{}, fmt.Errorf("%w for purpose %q", ErrNoRoute, d.Purpose)
	}
	o, err := rt.Handler.Deliver(ctx, d)
	o.Handler = rt.Name
	return o, err
}

// ErrNoRoute is returned by Router.Deliver for a purpose no route matches.
// It wraps ErrNotStarted: nothing was handed over.
var ErrNoRoute = fmt.Errorf("deliver: no handler configured (%w)", ErrNotStarted)

// effectID returns the "effectId" member of a JSON object receipt.
func effectID(receipt []byte) string {
	var v struct {
		EffectID string `json:"effectId"`
	}
	if json.Unmarshal(receipt, &v) != nil {
		return ""
	}
	return v.EffectID
}

// limitedBuffer keeps the first n bytes written to it and discards the rest.
type limitedBuffer struct {
	buf []byte
	n   int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.n - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
