// Package sender is the sending side of agent sessions, what
// `torporctl send` uses: it establishes a pair session with an agent
// through the agent's A2A endpoint (a Torpor relay's /a/{did}, or any
// draft-chapman-a2a-mls peer) and sends Governed Objects encrypted in it
// (Client), or unencrypted where the agent allows it (Plaintext). It reads
// the relay's answers in both of the offline profile's shapes (Answer,
// ReadAnswer) and follows the profile's rules for trying again (Retry:
// never after the relay queued a message, at its Retry-After otherwise).
//
// # Establishing (draft-chapman-a2a-mls-03 Section 6.2)
//
// GET <agent>/mls/key-package, with a DID Bearer token (a Torpor relay
// requires one), returns {did, wire}: the sender refuses an
// answer for another DID and a KeyPackage whose credential is not bound to
// the expected DID (Section 4.3), creates the group, commits the Add, and
// POSTs the Welcome and the ratchet tree in a handshake part (Section 7.6)
// to <agent>/a2a/jsonrpc with a DID Bearer token. The session is stored
// pending first and used only once the relay accepted the handshake (200,
// or 503 agent_asleep with "queued": true: the relay keeps it for the
// sleeping device). A KeyPackage that fails only its lifetime check (the
// relay hands out its oldest first) is skipped for the next one, a few
// times.
//
// # Sending (Section 7.5)
//
// Each object is encrypted in the current pair session and the advanced
// ratchet committed to bbolt before the request leaves: a crash can then
// lose a message but never reuse a key. The message carries only the MLS
// wire part, so it does not list the Governed Object extension (Section
// 7.2).
package sender

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// Peer is an agent to send to: its DID and the base URL of its A2A
// service, under which /mls/key-package and /a2a/jsonrpc are served.
type Peer struct {
	DID did.DID
	URL string
	// Envelope, when set, is presented on every object sent to the peer
	// (not on the handshake): the message activates the Autonomy Envelope
	// extension and carries the passport chain in its metadata
	// (a2a.PresentEnvelope, docs/envelope.md). The chain's aud is the
	// peer, so it belongs to the peer and not to the Client.
	Envelope *a2a.EnvelopeMetadata
}

// RelayPeer returns the peer agent id as a Torpor relay at relayURL serves
// it (relayURL/a/<did>).
func RelayPeer(relayURL string, id did.DID) Peer {
	return Peer{DID: id, URL: strings.TrimSuffix(relayURL, "/") + "/a/" + id.String()}
}

// Client sends to agents. Sessions and DB are required; DB holds the
// sessions' state (a bbolt file of the sender's own).
type Client struct {
	Sessions *session.Sessions
	DB       *bolt.DB
	// Key signs the DID Bearer tokens; it must be the sessions' key.
	Key *did.PrivateKey
	// HTTP is the HTTP client; nil means http.DefaultClient.
	HTTP *http.Client
	// Clock dates the bearer tokens; nil means clock.Real.
	Clock clock.Clock
	// Attempts bounds how many KeyPackages Establish fetches when they
	// fail their lifetime check; zero means 3.
	Attempts int
}

// Delivery is the relay's (or agent's) answer to a sent message.
type Delivery struct {
	// Status is the HTTP status: 200 when a live agent answered, 503 when
	// the relay queued the message for a sleeping device.
	Status int
	// Queued is true when the relay stored the message for later.
	Queued bool
	// RetryAfter is the relay's hint when the agent will be reachable,
	// zero for none.
	RetryAfter time.Duration
	// Body is the answer's body.
	Body []byte
}

// An HTTPError is an answer that delivered nothing.
type HTTPError struct {
	Op     string // "key-package" or "send"
	Status int
	Body   []byte
	// Header is the answer's header: WWW-Authenticate says why a token
	// was refused, Retry-After when to come back.
	Header http.Header
}

func (e *HTTPError) Error() string {
	body := string(e.Body)
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return fmt.Sprintf("sender: %s: HTTP %d: %s", e.Op, e.Status, strings.TrimSpace(body))
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// FetchKeyPackage fetches one KeyPackage of p (draft Section 6.1), with a
// DID Bearer token as the relay requires, and
// checks that the answer and the KeyPackage's credential name p.DID
// (session.ErrIdentityMismatch otherwise) and that it verifies and is
// bound (session.CheckKeyPackage). It returns the KeyPackage's bytes.
func (c *Client) FetchKeyPackage(ctx context.Context, p Peer) ([]byte, error) {
	tok, err := bearer.Issue(c.Key, p.URL, clock.Or(c.Clock).Now(), 0)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/mls/key-package", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("sender: key-package: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{Op: "key-package", Status: resp.StatusCode, Body: body, Header: resp.Header}
	}
	var ans struct {
		DID  string `json:"did"`
		Wire string `json:"wire"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("sender: key-package answer: %w", err)
	}
	if ans.DID != p.DID.String() {
		return nil, fmt.Errorf("%w: the answer is for %q, expected %s", session.ErrIdentityMismatch, ans.DID, p.DID)
	}
	wire, err := a2a.DecodeBase64(ans.Wire)
	if err != nil {
		return nil, fmt.Errorf("sender: key-package wire: %w", err)
	}
	kp, err := session.ParseKeyPackage(wire)
	if err != nil {
		return nil, err
	}
	if _, err := session.CheckKeyPackage(&mls.Config{Time: clock.Or(c.Clock).Now}, kp, p.DID); err != nil {
		return nil, err
	}
	return wire, nil
}

// Establish establishes a new pair session with p and returns its group
// ID; it becomes the current session with p.
func (c *Client) Establish(ctx context.Context, p Peer) ([]byte, error) {
	kp, err := c.fetchUsable(ctx, p)
	if err != nil {
		return nil, err
	}
	var pair *session.Pair
	if err := c.DB.Update(func(tx *bolt.Tx) (err error) {
		pair, err = c.Sessions.EstablishPair(tx, p.DID, kp)
		return err
	}); err != nil {
		return nil, err
	}
	part, err := pair.Handshake.Part()
	if err == nil {
		_, err = c.post(ctx, p, nil, part)
	}
	if err != nil {
		if derr := c.DB.Update(func(tx *bolt.Tx) error { return c.Sessions.Drop(tx, pair.Group) }); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	if err := c.DB.Update(func(tx *bolt.Tx) error { return c.Sessions.Delivered(tx, pair.Group) }); err != nil {
		return nil, err
	}
	return pair.Group, nil
}

// fetchUsable fetches KeyPackages until one passes its lifetime check.
func (c *Client) fetchUsable(ctx context.Context, p Peer) ([]byte, error) {
	n := c.Attempts
	if n <= 0 {
		n = 3
	}
	var err error
	for range n {
		var kp []byte
		if kp, err = c.FetchKeyPackage(ctx, p); err == nil || !errors.Is(err, mls.ErrLifetime) {
			return kp, err
		}
	}
	return nil, err
}

// Send encrypts the Governed Object obj in the current pair session with
// p, establishing one first when there is none, and posts it.
func (c *Client) Send(ctx context.Context, p Peer, obj json.RawMessage) (*Delivery, error) {
	group, err := c.current(p.DID)
	if errors.Is(err, session.ErrNoSession) {
		group, err = c.Establish(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	var w a2a.MLSWire
	err = c.DB.Update(func(tx *bolt.Tx) (err error) {
		w, err = c.Sessions.SealObject(tx, group, obj)
		return err
	})
	if err != nil {
		return nil, err
	}
	part, err := w.Part()
	if err != nil {
		return nil, err
	}
	return c.post(ctx, p, p.Envelope, part)
}

// current returns the current pair session with peer.
func (c *Client) current(peer did.DID) ([]byte, error) {
	var g []byte
	err := c.DB.View(func(tx *bolt.Tx) (err error) {
		g, err = c.Sessions.PairGroup(tx, peer)
		return err
	})
	return g, err
}

// post sends one A2A v1.0 message with parts to p's JSON-RPC endpoint,
// presenting em when it is not nil.
func (c *Client) post(ctx context.Context, p Peer, em *a2a.EnvelopeMetadata, parts ...a2a.Part) (*Delivery, error) {
	body, err := sendMessage("mls:"+c.Key.DID().String(), em, parts...)
	if err != nil {
		return nil, err
	}
	tok, err := bearer.Issue(c.Key, p.URL, clock.Or(c.Clock).Now(), 0)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/a2a/jsonrpc", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, a2a.Version10)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("sender: send: %w", err)
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	return delivery(resp, ans)
}

// delivery interprets the answer: a JSON-RPC result, or the relay's
// asleep answer after a durable enqueue.
func delivery(resp *http.Response, body []byte) (*Delivery, error) {
	d := &Delivery{Status: resp.StatusCode, Body: body}
	switch resp.StatusCode {
	case http.StatusOK:
		var r a2a.Response
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("sender: send: answer is not JSON-RPC: %w", err)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("sender: send: the agent refused the message: %w", r.Error)
		}
		return d, nil
	case http.StatusServiceUnavailable:
		if asleepQueued(body) {
			d.Queued = true
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				d.RetryAfter = time.Duration(s) * time.Second
			}
			return d, nil
		}
	}
	return nil, &HTTPError{Op: "send", Status: resp.StatusCode, Body: body, Header: resp.Header}
}

// asleepQueued reports whether a 503 body says the message was queued for
// a sleeping agent: the reference's {"error":"agent_asleep","queued":true}
// or a JSON-RPC error whose data says so (offline profile, -32003), which
// Torpor's relay combines with the former.
func asleepQueued(body []byte) bool {
	var a struct {
		Error  json.RawMessage `json:"error"`
		Queued bool            `json:"queued"`
	}
	if json.Unmarshal(body, &a) != nil {
		return false
	}
	var code string
	if json.Unmarshal(a.Error, &code) == nil {
		return code == "agent_asleep" && a.Queued
	}
	var rpc struct {
		Data struct {
			Error  string `json:"error"`
			Queued bool   `json:"queued"`
		} `json:"data"`
	}
	return json.Unmarshal(a.Error, &rpc) == nil && rpc.Data.Error == "agent_asleep" && rpc.Data.Queued
}

// sendMessage is the JSON-RPC SendMessage (A2A v1.0) of a user message
// with parts in context contextID, presenting em when it is not nil.
func sendMessage(contextID string, em *a2a.EnvelopeMetadata, parts ...a2a.Part) ([]byte, error) {
	id, err := messageID()
	if err != nil {
		return nil, err
	}
	m := a2a.NewUserMessage(id, contextID, parts...)
	if em != nil {
		if err := a2a.PresentEnvelope(&m, *em); err != nil {
			return nil, err
		}
	}
	rpc, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, m)
	if err != nil {
		return nil, err
	}
	return json.Marshal(rpc)
}

// messageID returns a random UUID (version 4) for an A2A messageId.
func messageID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
