package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

const (
	// Version is the frame protocol version. Version 2 added the
	// handshake's proof of possession (challenge, proof); a version 1 peer
	// is refused at the upgrade.
	Version = 2
	// Subprotocol is the WebSocket subprotocol of this version.
	Subprotocol = "torpor-link.v2"
	// SubprotocolV1 is the subprotocol of version 1, which the relay names
	// only to refuse it with an error that says to upgrade.
	SubprotocolV1 = "torpor-link.v1"
	// Path is where the relay accepts links.
	Path = "/link"
	// MaxFrame bounds one frame in either direction. A records frame is
	// filled up to MaxBatchBytes of bodies, so it always fits.
	MaxFrame = 8 << 20
	// MaxBatchBytes bounds the bodies of one records frame; a single record
	// larger than that (it cannot be: the queue's MaxMessageSize is far
	// smaller) still travels alone.
	MaxBatchBytes = 4 << 20
	// PingInterval is how often the relay pings a link whose device asks
	// for no other interval (PingHeader), and the shortest it pings at.
	PingInterval = 30 * time.Second
	// MaxPingInterval is the longest interval between pings a device may
	// ask for (PingHeader): under the 60 s that proxies in front of a
	// relay allow an idle connection by default (nginx's
	// proxy_read_timeout, an AWS load balancer's idle timeout), so that
	// the pings still keep the link open through them.
	MaxPingInterval = 50 * time.Second
	// PingHeader is the header of the upgrade request in which a device
	// asks the relay to ping its link every so many whole seconds (decimal
	// digits), between PingInterval and MaxPingInterval: each ping wakes
	// an idle device's process (and its radio) to answer. A relay that
	// predates it ignores it and pings every PingInterval; a device that
	// sends none is pinged every PingInterval.
	PingHeader = "Torpor-Link-Ping"
)

// PingEvery returns the interval between pings that the PingHeader value
// v asks for, held between PingInterval and MaxPingInterval; PingInterval
// for an empty or malformed value.
func PingEvery(v string) time.Duration {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return PingInterval
	}
	return min(max(time.Duration(n)*time.Second, PingInterval), MaxPingInterval)
}

// Frame types (Frame.T); the package doc says who sends each.
const (
	FrameChallenge = "challenge"
	FrameProof     = "proof"
	FrameHello     = "hello"
	FrameState     = "state"
	FrameStateOK   = "state-ok"
	FramePull      = "pull"
	FrameRecords   = "records"
	FrameAck       = "ack"
	FrameAcked     = "acked"
	FrameRequest   = "request"
	FrameResponse  = "response"
	FrameQueued    = "queued"
	FrameError     = "error"
	// FrameUpdate and FrameUpdateData fetch the relay's update
	// repository (update.go).
	FrameUpdate     = "update"
	FrameUpdateData = "update-data"
)

// ErrProtocol is returned (wrapped) when the peer sends a frame this
// version does not understand.
var ErrProtocol = errors.New("link: protocol error")

// RemoteError is an error frame from the peer.
type RemoteError struct {
	Code    string // machine-readable, e.g. "bad-card"
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("link: remote error %s: %s", e.Code, e.Message)
}

// Frame is the one wire message; which members are set depends on T.
type Frame struct {
	V        int                 `cbor:"v"`
	T        string              `cbor:"t"`
	ID       uint64              `cbor:"id,omitempty"`
	Bounds   *queuebounds.Bounds `cbor:"bounds,omitempty"`
	Held     *Held               `cbor:"held,omitempty"`
	State    *State              `cbor:"state,omitempty"`
	After    uint64              `cbor:"after,omitempty"`
	Max      int                 `cbor:"max,omitempty"`
	Records  []Record            `cbor:"records,omitempty"`
	More     bool                `cbor:"more,omitempty"`
	Seqs     []uint64            `cbor:"seqs,omitempty"`
	Request  *Request            `cbor:"req,omitempty"`
	Response *Response           `cbor:"resp,omitempty"`
	Seq      uint64              `cbor:"seq,omitempty"`
	Code     string              `cbor:"code,omitempty"`
	Message  string              `cbor:"msg,omitempty"`
	// Challenge and Proof are the handshake's (proof.go).
	Challenge *Challenge `cbor:"challenge,omitempty"`
	Proof     []byte     `cbor:"proof,omitempty"`
	// WakeSecond is a state-ok's Accepted.WakeSecond.
	WakeSecond *int `cbor:"wakeSecond,omitempty"`
	// Update is an update frame's request, Data an update-data's bytes.
	Update *UpdateRequest `cbor:"upd,omitempty"`
	Data   []byte         `cbor:"data,omitempty"`
	// Offer is a state-ok's Accepted.Offer (offer.go).
	Offer *Offer `cbor:"offer,omitempty"`
	// CardDigest is a state-ok's Accepted.CardDigest.
	CardDigest []byte `cbor:"cardDigest,omitempty"`
	// Empty, in a hello, says that the relay's queue held no record for
	// the device once the link was up: a record queued later comes with
	// a queued frame, so the device need not pull. Absent (false, and
	// from a relay that predates it) says nothing: the device pulls.
	Empty bool `cbor:"empty,omitempty"`
}

// State is what a device publishes about itself. Every publish replaces the
// previous state, except KeyPackages, which are added to the agent's pool.
type State struct {
	// Mode is the reachability mode: always_on, session, hourly_wake or
	// sleep.
	Mode string `cbor:"mode"`
	// Window is the hourly window; nil means the default (the wake minute
	// of the agent's DID, 5 minutes). Used in hourly_wake mode.
	Window *Window `cbor:"window,omitempty"`
	// NextWake is the Unix time (seconds) of the next wake the device plans
	// (its schedule's, or one an operator scheduled),
	// 0 for none. In sleep mode it is the only source of a Retry-After.
	NextWake int64 `cbor:"nextWake,omitempty"`
	// Card is the Agent Card JSON signed by the device (a2a.SignCard). The
	// relay verifies kid == the device's DID and serves it verbatim;
	// empty keeps the card it has, which must still agree with the state.
	// The agent leaves the card out while the relay holds it
	// (Accepted.CardDigest, or accepted over the same link), and the
	// pulse out once the relay accepted it over the same link (every
	// relay version keeps them).
	Card []byte `cbor:"card,omitempty"`
	// KeyPackages are MLSMessage-wrapped KeyPackages (RFC 9420, Section 6,
	// wire_format mls_key_package) to add to the pool; each is handed out
	// once. Only public halves: the private keys never leave the device.
	KeyPackages [][]byte `cbor:"keyPackages,omitempty"`
	// LastResort is the agent's last-resort KeyPackage (RFC 9420, Section
	// 16.8), MLSMessage-wrapped like KeyPackages: the relay keeps one per
	// agent, replacing the previous one, and hands it out only while the
	// pool is empty, without deleting it. Empty means unchanged. A relay
	// that predates it ignores the member and its state-ok names no
	// Held.LastResort, so the device publishes it again at every state.
	LastResort []byte `cbor:"lastResort,omitempty"`
	// Pulse is the device's latest signed liveness pulse. Its format is the
	// agent's (Autonomy Envelope pulses); the relay stores and serves it
	// verbatim next to the card and does not interpret it. Empty keeps
	// the one it has.
	Pulse []byte `cbor:"pulse,omitempty"`
	// ReplaceKeyPackages makes KeyPackages replace the agent's whole pool
	// rather than add to it (an empty list then empties it): a device
	// that no longer trusts what the relay holds, or lost the private
	// halves, starts the pool afresh. The last-resort KeyPackage is not
	// affected.
	ReplaceKeyPackages bool `cbor:"replaceKeyPackages,omitempty"`
	// Bounds are the bounds the device asks for; zero members mean the
	// relay's ceiling. The relay clamps them to its ceiling and answers with
	// the bounds in force, which the card must then publish.
	Bounds *queuebounds.Bounds `cbor:"bounds,omitempty"`
	// Retirement, when set, retires the agent's DID after a key rotation:
	// a Governed Object (JSON) issued and signed by this DID, with purpose
	// PurposeRetirement and a payload naming this DID as "old" and its
	// successor as "new". The relay verifies it, keeps it, and from then
	// on answers this DID's senders 410 Gone naming the successor. A later
	// state without it (the rotation failed) lifts the retirement.
	Retirement []byte `cbor:"retirement,omitempty"`
	// Status, when set, is a Governed Object (JSON) issued and signed by
	// the agent's DID with purpose PurposeStatus, whose payload is a
	// Status (status.go). The relay verifies it and keeps it for the
	// fleet console; empty leaves the one it keeps unchanged (the agent
	// sends none when the payload is the one the relay accepted over the
	// same link). A relay that predates it ignores the member.
	Status []byte `cbor:"status,omitempty"`
	// HeldDigest, when set, is the HeldDigest of the Held the device
	// learnt last (from any link): a relay that holds the same
	// KeyPackages leaves Held out of the state-ok of a state that
	// publishes none, for the device knows them (every wake opens a new
	// link, and a pool of 20 is 0.9 KB). A relay that predates it ignores
	// the member and names them.
	HeldDigest []byte `cbor:"heldDigest,omitempty"`
	// Enrolment, when set, is the device's enrolment by its owner: a
	// Governed Object (JSON) issued and signed by an owner DID, with
	// purpose PurposeEnrolment, whose payload is an EnrolmentPayload
	// naming this device. A relay that trusts the owner (torpor-relay
	// --owner, --admission owner) admits the device at once, without an
	// operator; other relays ignore it, as one that predates it does.
	Enrolment []byte `cbor:"enrolment,omitempty"`
}

// PurposeEnrolment is the purpose of an Enrolment: an owner's statement
// that a device is theirs (torporctl enrol).
const PurposeEnrolment = "torpor:enrolment"

// EnrolmentPayload is the payload of an Enrolment.
type EnrolmentPayload struct {
	// Device is the enrolled device's DID.
	Device string `json:"device"`
	// Name, when set, is the name the owner gives the device.
	Name string `json:"name,omitempty"`
}

// PurposeRetirement is the purpose of a Retirement: the key handover the
// old key signs at a rotation (runtime/manage's PurposeKeyHandover).
const PurposeRetirement = "torpor:key-handover"

// Accepted is the relay's answer to a published state.
type Accepted struct {
	// Bounds are the queue bounds now in force.
	Bounds queuebounds.Bounds
	// Held names the KeyPackages the relay still holds for the agent once
	// the state was stored; nil when the relay did not say. A KeyPackage
	// the device published that is not among them was handed out to an
	// initiator (or lost by the relay): the device counts it as used, and
	// keeps its private halves for as long as a Welcome to it may still
	// be queued. The link server leaves it out when the state published
	// no KeyPackage and the relay holds those the link's last state-ok
	// named: the device knows them already.
	Held *Held
	// WakeSecond, when set, is the second (0–59) of its window's minute at
	// which the relay asks the device to open its hourly window from its
	// next window on, in place of the second it derives itself
	// (wake.WakeSecond): the relay hands out seconds so that the devices
	// of a minute are spread evenly over it (wake.Seconds). The device
	// keeps it and publishes it in its window's offset as before. nil
	// when the relay did not say (it predates assignments); a device that
	// predates them ignores it.
	WakeSecond *int
	// Offer, when set, is the update a rollout of the relay asks the
	// device to install (offer.go); nil when none, and from relays that
	// predate offers.
	Offer *Offer
	// CardDigest is the CardDigest of the card the relay holds for the
	// device once the state was stored; nil when it holds none or did
	// not say (it predates the member). The device leaves its card out
	// of later states while it is the one named here; a device that
	// predates the member ignores it.
	CardDigest []byte
	// Relink, set by the relay's side only and never sent, makes the link
	// server end the link once the state-ok is written, with Relink as
	// the reason: the state admitted the device (an owner's enrolment),
	// and it links again for the relay's ceiling.
	Relink string
}

// Held is the set of KeyPackages a relay holds for an agent.
type Held struct {
	// Digests are the KeyPackageDigest of each, in no particular order.
	Digests [][]byte `cbor:"digests"`
	// LastResort is the KeyPackageDigest of the last-resort KeyPackage
	// the relay holds; empty when it holds none (or predates them).
	LastResort []byte `cbor:"lastResort,omitempty"`
}

// KeyPackageDigest is how the link names a KeyPackage: the SHA-256 of
// its MLSMessage-wrapped encoding as published.
func KeyPackageDigest(wire []byte) []byte {
	d := sha256.Sum256(wire)
	return d[:]
}

// HeldDigest names a Held as a whole: the SHA-256 of its digests in
// ascending order, each preceded by its length (4 bytes, big-endian),
// then the last resort's digest, preceded by its length likewise.
func HeldDigest(h *Held) []byte {
	ds := slices.Clone(h.Digests)
	slices.SortFunc(ds, bytes.Compare)
	s := sha256.New()
	var b []byte
	for _, d := range ds {
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.LastResort)))
	s.Write(append(b, h.LastResort...))
	return s.Sum(nil)
}

// CardDigest is how the link names a card: the SHA-256 of the signed
// card's bytes as published.
func CardDigest(card []byte) []byte {
	d := sha256.Sum256(card)
	return d[:]
}

// Window is an hourly wake window: it opens at Minute past every hour (UTC)
// plus Offset, and lasts Length.
type Window struct {
	Minute    int   `cbor:"minute"`
	LengthSec int64 `cbor:"lengthSec"`
	OffsetSec int64 `cbor:"offsetSec,omitempty"`
}

// Record is one queued request delivered to the device.
type Record struct {
	Seq        uint64 `cbor:"seq"`
	From       string `cbor:"from"`
	Kind       uint8  `cbor:"kind"` // 0 message, 1 handshake: store/queue.Kind
	EnqueuedAt int64  `cbor:"enq"`  // Unix nanoseconds
	ExpiresAt  int64  `cbor:"exp"`  // Unix nanoseconds
	Body       []byte `cbor:"body"`
}

// Request is a live A2A request forwarded to the device.
type Request struct {
	// From is the caller's DID, proven by its DID Bearer token.
	From string `cbor:"from"`
	// Version is the A2A protocol version of the request: "1.0" when the
	// caller sent A2A-Version: 1.0, "0.3" when it sent none.
	Version string `cbor:"ver"`
	// Extensions is the caller's A2A-Extensions header, if any.
	Extensions string `cbor:"ext,omitempty"`
	// Body is the raw JSON-RPC request.
	Body []byte `cbor:"body"`
}

// Response is the device's answer to a Request, written back to the caller
// as it is.
type Response struct {
	Status      int    `cbor:"status"`
	ContentType string `cbor:"ctype,omitempty"`
	Body        []byte `cbor:"body,omitempty"`
}

var (
	encMode = must(cbor.EncOptions{}.EncMode())
	// decMode refuses duplicate map keys and bounds nesting and sizes, so a
	// hostile peer cannot make the decoder allocate without limit.
	decMode = must(cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  8,
		MaxArrayElements: 1 << 16,
		MaxMapPairs:      64,
	}.DecMode())
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Encode sets f's version to Version and returns its CBOR encoding.
func Encode(f *Frame) ([]byte, error) {
	f.V = Version
	return encMode.Marshal(f)
}

// Decode parses one frame. It returns an error wrapping ErrProtocol for
// bytes that are not a frame of this version.
func Decode(b []byte) (*Frame, error) {
	var f Frame
	if err := decMode.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if f.V != Version {
		return nil, fmt.Errorf("%w: frame version %d, want %d", ErrProtocol, f.V, Version)
	}
	if len(f.Proof) == 0 {
		f.Proof = nil // an empty proof is no proof; Encode omits it
	}
	return &f, nil
}
