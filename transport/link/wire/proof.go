package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/torpor-dev/torpor/internal/canon"
)

// NonceSize is the length of a handshake challenge's nonce.
const NonceSize = 32

// ProofContext starts every message a device signs to prove possession of
// its key in the link handshake. The same Ed25519 key signs DID Bearer
// token claims and Governed Objects (RFC 8785 canonical JSON, which starts
// with "{") and MLS structures (RFC 9420, Section 5.1.2, SignWithLabel:
// a length-prefixed "MLS 1.0 " label), so a fixed prefix that none of
// those can start with keeps a link proof from ever being valid as one of
// them, or one of them as a proof (domain separation).
const ProofContext = "torpor-link/v2 proof of possession\x00"

// Challenge is the relay's handshake challenge: the first frame of a link,
// before hello. The device answers with a proof frame whose Proof is its
// signature over ProofMessage.
type Challenge struct {
	// Nonce is NonceSize fresh random bytes, never sent twice.
	Nonce []byte `cbor:"nonce"`
	// Origin is the relay's public origin (its token audience). The
	// device refuses to sign a challenge for another origin than the one
	// it dialled, so that a relay cannot pass another relay's challenge
	// on to it.
	Origin string `cbor:"origin"`
	// Time is when the relay accepted the connection, Unix seconds by the
	// relay's clock. The proof signs it. A device without time of its own
	// to trust (no NTP sync, no RTC) may move the clock it judges Governed
	// Object expiry by forward to it, never back (runtime/trusted;
	// docs/security.md, "Trusted time").
	Time int64 `cbor:"time"`
}

// proofClaims is what a proof signs, as canonical JSON.
type proofClaims struct {
	DID    string `json:"did"`
	Nonce  string `json:"nonce"`
	Origin string `json:"origin"`
	Time   int64  `json:"time"`
	Token  string `json:"token"`
}

// ProofMessage returns the bytes a device signs with its did:key's
// Ed25519 key (RFC 8032, pure Ed25519) to answer c on a link it opened
// as agent with the link token token (the bare "atom.…" form the relay
// verified): ProofContext followed by the RFC 8785 canonical JSON of
//
//	{"did":agent,"nonce":b64url(c.Nonce),"origin":c.Origin,"time":c.Time,
//	 "token":b64url(SHA-256(token))}
//
// (base64url without padding, RFC 4648 Section 5). The token's hash ties
// the proof to the token presented on this connection, the nonce to this
// connection.
func ProofMessage(c Challenge, agent, token string) ([]byte, error) {
	if len(c.Nonce) != NonceSize {
		return nil, fmt.Errorf("%w: challenge nonce of %d bytes, want %d", ErrProtocol, len(c.Nonce), NonceSize)
	}
	th := sha256.Sum256([]byte(token))
	b, err := canon.Marshal(proofClaims{
		DID: agent, Nonce: base64.RawURLEncoding.EncodeToString(c.Nonce), Origin: c.Origin, Time: c.Time,
		Token: base64.RawURLEncoding.EncodeToString(th[:]),
	})
	if err != nil {
		return nil, err
	}
	return append([]byte(ProofContext), b...), nil
}
