package sender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// Attempt sends obj to p once in the pair session (Send) and returns the
// answer as ReadAnswer reads it: a live agent's refusal is an Answer with
// RPCCode set, and so is a relay's refusal that delivered nothing. A
// KeyPackage the relay would not give is an error (KeyPackageError), as
// is a failure that produced no answer.
func (c *Client) Attempt(ctx context.Context, p Peer, obj *governed.Object) (Answer, error) {
	j, err := obj.MarshalJSON()
	if err != nil {
		return Answer{}, err
	}
	d, err := c.Send(ctx, p, j)
	var he *HTTPError
	var rpcErr *a2a.RPCError
	switch {
	case errors.As(err, &he) && he.Op == "key-package":
		return Answer{}, KeyPackageError(p.DID, he)
	case errors.As(err, &he):
		return ReadAnswer(he.Status, he.Header, he.Body), nil
	case errors.As(err, &rpcErr):
		return Answer{Status: http.StatusOK, Error: "rejected", RPCCode: rpcErr.Code, Message: rpcErr.Message}, nil
	case err != nil:
		return Answer{}, err
	}
	ans := ReadAnswer(d.Status, nil, d.Body)
	ans.Queued = ans.Queued || d.Queued
	if ans.RetryAfter == 0 {
		ans.RetryAfter = int(d.RetryAfter / time.Second)
	}
	return ans, nil
}

// Plaintext sends Governed Objects unencrypted, for agents that allow it:
// each in a data-object part (draft-chapman-a2a-mls-03 Section 7.4) of an
// A2A v1.0 SendMessage, with a DID Bearer token for the relay's origin.
// Relay and Key are required.
type Plaintext struct {
	// Relay is the relay's origin (https://relay.example.org).
	Relay string
	// Key signs the DID Bearer tokens.
	Key *did.PrivateKey
	// HTTP is the HTTP client; nil means http.DefaultClient.
	HTTP *http.Client
	// Clock dates the bearer tokens (the relay's clock, when it runs
	// scaled); nil means clock.Real.
	Clock clock.Clock
	// Envelope, when set, is presented on every message (as
	// Peer.Envelope is): its chain names one receiving agent, so a
	// Plaintext that presents one sends to that agent only.
	Envelope *a2a.EnvelopeMetadata
}

// Attempt posts obj to agent once through the relay and returns its
// answer; an error means there was none.
func (p *Plaintext) Attempt(ctx context.Context, agent did.DID, obj *governed.Object) (Answer, error) {
	body, err := plaintextRequest(obj, p.Envelope)
	if err != nil {
		return Answer{}, err
	}
	aud, err := bearer.NormalizeAudience(p.Relay)
	if err != nil {
		return Answer{}, fmt.Errorf("sender: relay URL: %w", err)
	}
	tok, err := bearer.Issue(p.Key, aud, clock.Or(p.Clock).Now(), 0)
	if err != nil {
		return Answer{}, err
	}
	url := RelayPeer(p.Relay, agent).URL + "/a2a/jsonrpc"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(a2a.VersionHeader, a2a.Version10)
	hr.Header.Set("Authorization", bearer.Authorization(tok))
	hc := p.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return ReadAnswer(resp.StatusCode, resp.Header, b), nil
}

// plaintextRequest is the JSON-RPC SendMessage carrying obj in a
// data-object part, presenting em when it is not nil.
func plaintextRequest(obj *governed.Object, em *a2a.EnvelopeMetadata) ([]byte, error) {
	j, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	part, err := a2a.DataObjectPart{Object: j}.Part()
	if err != nil {
		return nil, err
	}
	return sendMessage("", em, part)
}
