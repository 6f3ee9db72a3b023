// Package fleet lets the relays of a fleet (docs/scale-out.md) reach each
// other's device links over NATS core request/reply: a relay that holds
// an agent's link answers on that agent's subjects, so a request another
// relay took is forwarded to it, a record another relay queued is
// announced on the link, and a device that links again through another
// relay has its older link dropped. Fleet implements relay.Peers.
//
// Subjects, with <agent> the unpadded base64url of the agent's DID:
//
//	torpor.link.<agent>.up      request; the holder answers (no responders: none);
//	                            asked only by a relay without a Presence view
//	torpor.link.<agent>.fwd     request: a CBOR wire.Request; answer: a CBOR reply
//	torpor.link.<agent>.notify  a queued seq (uint64, big-endian)
//	torpor.link.<agent>.fence   a new link's (time, relay id): older links drop
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Presence is the fleet's link presence in the shared bucket
// (jsstore.Links): every relay holding a link keeps a key for it, which
// every relay watches, so that a relay knows whether a device is linked
// elsewhere without asking the fleet on every request.
type Presence interface {
	// Up reports whether another relay holds agent's link; known is false
	// when the view cannot tell (its watch has not started or has ended).
	Up(agent string) (up, known bool)
	// Hold writes this relay's key for agent's link, again each time it
	// is called; Release removes it.
	Hold(ctx context.Context, agent string) error
	Release(ctx context.Context, agent string) error
}

// Local is this relay's side of the links (transport/link/server.Server).
type Local interface {
	Up(agent string) bool
	Forward(ctx context.Context, agent string, req wire.Request) (wire.Response, error)
	Notify(agent string, seq uint64)
	Drop(agent, reason string) bool
}

// LiveTimeout bounds a forwarded request on the relay that holds the link.
const LiveTimeout = 30 * time.Second

// Fleet is one relay's membership in its fleet.
type Fleet struct {
	nc  *nats.Conn
	id  string
	clk clock.Clock
	log *slog.Logger

	mu    sync.Mutex
	local Local
	held  map[string]*held // agent → this relay's subscriptions for its link

	presence Presence
	keyed    map[string]bool // agents whose presence key this relay wrote and has not removed
	writes   []chan string   // UsePresence's workers, by agent
	done     chan struct{}   // closed by Close
}

// held is a link this relay holds: when it came up and its subscriptions.
type held struct {
	since   int64
	subs    []*nats.Subscription
	ctx     context.Context    // the link's; ends when it goes
	stop    context.CancelFunc // ends the link's pending notice
	noticed bool               // the pending notice was started
}

// New joins the fleet over nc. clk dates links, to tell the newer of two
// (nil is the real clock). Call Serve with the relay's link server before
// the relay serves links.
func New(nc *nats.Conn, clk clock.Clock, log *slog.Logger) *Fleet {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Fleet{nc: nc, id: rand.Text(), clk: clock.Or(clk), log: log, held: map[string]*held{}, done: make(chan struct{})}
}

// ID is this relay's id in the fleet: letters and digits, new at every
// start.
func (f *Fleet) ID() string { return f.id }

// Serve sets the relay's link server, which answers for the links this
// relay holds.
func (f *Fleet) Serve(local Local) {
	f.mu.Lock()
	f.local = local
	f.mu.Unlock()
}

func subject(agent, op string) string {
	return "torpor.link." + base64.RawURLEncoding.EncodeToString([]byte(agent)) + "." + op
}

// UpTimeout bounds Up's question to the fleet whether another relay holds
// a link; no answer in time means none does.
const UpTimeout = 2 * time.Second

// Up implements relay.Peers: from the Presence view when there is one
// that knows, else by asking the fleet (no responders, or no answer within
// UpTimeout: no relay holds the link). The view answers without a timer.
func (f *Fleet) Up(ctx context.Context, agent string) bool {
	if p := f.presence; p != nil {
		if up, known := p.Up(agent); known {
			return up
		}
	}
	ctx, cancel := clock.WithTimeout(ctx, clock.Unscaled(f.clk), UpTimeout)
	defer cancel()
	_, err := f.nc.RequestWithContext(ctx, subject(agent, "up"), nil)
	return err == nil
}

// Notify implements relay.Peers.
func (f *Fleet) Notify(agent string, seq uint64) {
	_ = f.nc.Publish(subject(agent, "notify"), binary.BigEndian.AppendUint64(nil, seq))
}

// reply is the answer to a forwarded request.
type reply struct {
	Response *wire.Response `cbor:"1,keyasint,omitempty"`
	// Err is "not-linked", "unanswered" or "remote" (with Code and
	// Message, a wire.RemoteError); empty with a Response.
	Err     string `cbor:"2,keyasint,omitempty"`
	Code    string `cbor:"3,keyasint,omitempty"`
	Message string `cbor:"4,keyasint,omitempty"`
}

// Forward implements relay.Peers.
func (f *Fleet) Forward(ctx context.Context, agent string, req wire.Request) (wire.Response, error) {
	b, err := cbor.Marshal(req)
	if err != nil {
		return wire.Response{}, err
	}
	m, err := f.nc.RequestWithContext(ctx, subject(agent, "fwd"), b)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Response{}, server.ErrNotLinked
	case err != nil:
		return wire.Response{}, fmt.Errorf("%w: forwarding to the relay that holds the link: %v", server.ErrUnanswered, err)
	}
	var r reply
	if err := cbor.Unmarshal(m.Data, &r); err != nil {
		return wire.Response{}, fmt.Errorf("%w: %v", server.ErrUnanswered, err)
	}
	switch {
	case r.Err == "not-linked":
		return wire.Response{}, server.ErrNotLinked
	case r.Err == "remote":
		return wire.Response{}, &wire.RemoteError{Code: r.Code, Message: r.Message}
	case r.Err != "" || r.Response == nil:
		return wire.Response{}, fmt.Errorf("%w: %s", server.ErrUnanswered, r.Message)
	}
	return *r.Response, nil
}
