package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// HandshakeTimeout bounds how long the relay waits for the device's proof
// after it sent the challenge, in real time (also on a scaled clock).
const HandshakeTimeout = 10 * time.Second

// DefaultMaxSpentTokens is Server.MaxSpentTokens when that is zero.
const DefaultMaxSpentTokens = 1 << 16

// Errors of the handshake.
var (
	// ErrTokenReplayed is why a link token presented a second time is
	// refused (401).
	ErrTokenReplayed = errors.New("link: token already used")
	// ErrBusy is why a link is refused (503) while the relay holds
	// Server.MaxSpentTokens unexpired link tokens, or cannot reach the
	// shared memory of spent tokens (Server.Spent).
	ErrBusy = errors.New("link: too many link tokens in use")
	// ErrBadProof is why a link whose device did not sign the challenge
	// with its DID's key is closed before it becomes the agent's link.
	ErrBadProof = errors.New("link: no proof of possession of the device key")
)

// linkVerifier is Verifier restricted to link tokens.
func (s *Server) linkVerifier() *bearer.Verifier {
	v := *s.Verifier
	v.Purpose = bearer.PurposeLink
	return &v
}

// spend records tok as used until its expiry plus the clock skew the
// verifier allows (Server.Spent), or returns an error: a *bearer.Error
// wrapping ErrTokenReplayed (for the 401) when it was used before, and
// one wrapping ErrBusy when the memory is full of unexpired tokens or
// failed (a shared memory the relay cannot reach): refused, never
// accepted twice.
func (s *Server) spend(ctx context.Context, tok *bearer.Token) error {
	now := clock.Or(s.Clock).Now()
	until := time.Unix(tok.Claims.Exp, 0).Add(bearer.DefaultSkew)
	err := s.spentTokens().Spend(ctx, sha256.Sum256([]byte(tok.String())), until, now)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, shared.ErrReplayed):
		return &bearer.Error{Check: ErrTokenReplayed, Detail: "transport token: link token already used",
			Reason: "each link token opens one link; issue a new one for every link"}
	default:
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
}

// spentTokens is Server.Spent, or the server's own memory when that is
// nil.
func (s *Server) spentTokens() shared.Spent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Spent == nil {
		max := s.MaxSpentTokens
		if max <= 0 {
			max = DefaultMaxSpentTokens
		}
		s.Spent = shared.NewMemory().Spent("link", max)
	}
	return s.Spent
}

// handshake proves that the device holds its DID's key before the
// connection becomes the agent's link: the relay sends a challenge (a
// fresh nonce, its origin, the time), and the device must answer with a
// proof frame whose Proof is the Ed25519 signature (RFC 8032) of
// wire.ProofMessage by the key inside the DID the token named. A token
// alone, copied off the wire, so opens nothing. On failure the connection
// is closed with a reason and the agent's current link, if any, is left
// alone.
func (c *serverConn) handshake(token string) error {
	ch := wire.Challenge{Nonce: make([]byte, wire.NonceSize), Origin: c.s.linkOrigin(), Time: clock.Or(c.s.Clock).Now().Unix()}
	rnd := c.s.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	if _, err := io.ReadFull(rnd, ch.Nonce); err != nil {
		c.ws.Close(websocket.StatusInternalError, "relay error")
		return err
	}
	// A wait for the device to answer: real time, even on a scaled clock
	// (the clock package's rule for waits on a peer).
	ctx, cancel := clock.WithTimeout(c.ctx, clock.Unscaled(clock.Or(c.s.Clock)), HandshakeTimeout)
	defer cancel()
	if err := c.write(ctx, &wire.Frame{T: wire.FrameChallenge, Challenge: &ch}); err != nil {
		return err
	}
	f, err := c.readFrame(ctx)
	if err == nil && f.T != wire.FrameProof {
		err = fmt.Errorf("%w: frame %q, want proof", wire.ErrProtocol, f.T)
	}
	if err != nil {
		c.ws.Close(websocket.StatusPolicyViolation, "handshake: "+truncate(err.Error()))
		return err
	}
	msg, err := wire.ProofMessage(ch, c.agent.String(), token)
	if err != nil || !c.agent.Verify(msg, f.Proof) {
		c.write(ctx, &wire.Frame{T: wire.FrameError, Code: "bad-proof", Message: "the proof does not verify under the key of " + c.agent.String()})
		c.ws.Close(websocket.StatusPolicyViolation, "no proof of possession of the device key")
		return ErrBadProof
	}
	return nil
}

// linkOrigin is the origin challenges name: the verifier's audience.
func (s *Server) linkOrigin() string {
	o, err := bearer.NormalizeAudience(s.Verifier.Audience)
	if err != nil {
		return s.Verifier.Audience
	}
	return o
}

// readFrame reads one binary frame.
func (c *serverConn) readFrame(ctx context.Context) (*wire.Frame, error) {
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageBinary {
		return nil, fmt.Errorf("%w: text message", wire.ErrProtocol)
	}
	return wire.Decode(b)
}

// truncate keeps a WebSocket close reason within the 123 bytes RFC 6455,
// Section 5.5, allows a control frame's payload after the status code.
func truncate(s string) string {
	if len(s) > 100 {
		return s[:100]
	}
	return s
}
