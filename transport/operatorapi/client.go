package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// maxAnswer bounds the answers the Client reads.
const maxAnswer = 64 << 20

// Client calls a relay's operator API. Origin and Key are required; the
// relay must list Key's DID among its operators.
type Client struct {
	// Origin is the relay's origin as bearer.NormalizeAudience gives it;
	// tokens name it as their audience.
	Origin string
	Key    *did.PrivateKey
	// Clock dates the tokens (the relay's clock when it runs scaled); nil
	// means clock.Real.
	Clock clock.Clock
	// HTTP is the HTTP client; nil means http.DefaultClient.
	HTTP *http.Client
	// Tenant, on a hosted relay, is the owner DID of the tenant whose
	// rollouts StartRollout, Rollouts, GetRollout and ChangeRollout act on
	// (TenantRolloutsPath; Key must be an operator its owner named);
	// empty means the relay's own (RolloutsPath).
	Tenant string
}

// Fleet fetches the fleet console's view of every device, only those in
// state when it is not empty, and returns it with the JSON as the relay
// sent it.
func (c *Client) Fleet(ctx context.Context, state string) (Fleet, []byte, error) {
	return c.FleetQuery(ctx, Query{State: state})
}

// FleetQuery fetches the fleet console's view of the devices q selects
// (every one of them unless q names a page or its size) and returns it
// with the JSON as the relay sent it.
func (c *Client) FleetQuery(ctx context.Context, q Query) (Fleet, []byte, error) {
	tok, err := bearer.IssuePurpose(c.Key, c.Origin, bearer.PurposeFleet, clock.Or(c.Clock).Now(), time.Minute)
	if err != nil {
		return Fleet{}, nil, err
	}
	u := c.Origin + "/fleet/api/devices"
	if v := q.Values(); len(v) > 0 {
		u += "?" + v.Encode()
	}
	status, body, err := c.do(ctx, http.MethodGet, u, tok)
	if err != nil {
		return Fleet{}, nil, err
	}
	if status != http.StatusOK {
		var e struct{ Message string }
		json.Unmarshal(body, &e)
		if status == http.StatusNotFound {
			e.Message = "this relay serves no fleet console (it has no --operator)"
		}
		return Fleet{}, nil, fmt.Errorf("%s: HTTP %d: %s", u, status, e.Message)
	}
	var f Fleet
	if err := json.Unmarshal(body, &f); err != nil {
		return Fleet{}, nil, fmt.Errorf("%s: %v", u, err)
	}
	return f, body, nil
}

// ListQueue lists agent's queued records (of sender only, when it is not
// empty) and returns them with the JSON as the relay sent it.
func (c *Client) ListQueue(ctx context.Context, agent, sender string) (QueueAnswer, []byte, error) {
	return c.queue(ctx, http.MethodGet, agent, sender, false)
}

// PurgeQueue removes agent's queued records of sender, or every one when
// all is true (then sender must be empty), and returns what the relay
// says it removed.
func (c *Client) PurgeQueue(ctx context.Context, agent, sender string, all bool) (QueueAnswer, []byte, error) {
	if (sender == "") != all {
		return QueueAnswer{}, nil, fmt.Errorf("operatorapi: a purge takes a sender or all, not both")
	}
	return c.queue(ctx, http.MethodDelete, agent, sender, all)
}

func (c *Client) queue(ctx context.Context, method, agent, sender string, all bool) (QueueAnswer, []byte, error) {
	var ans QueueAnswer
	path := "/operator/queue/" + url.PathEscape(agent)
	tok, err := c.OperatorToken(method, path)
	if err != nil {
		return ans, nil, err
	}
	q := url.Values{}
	if sender != "" {
		q.Set("sender", sender)
	}
	if all {
		q.Set("all", "1")
	}
	u := c.Origin + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	status, raw, err := c.do(ctx, method, u, tok)
	if err != nil {
		return ans, nil, err
	}
	if err := json.Unmarshal(raw, &ans); err != nil || status != http.StatusOK {
		return ans, nil, fmt.Errorf("relay answered %d %s: %s", status, http.StatusText(status), ans.reason(raw))
	}
	return ans, raw, nil
}

// OperatorToken mints the token of one request to the relay's operator
// endpoints: purpose bearer.OperatorPurpose(method, path), a random jti,
// bearer.OperatorTTL. The relay accepts it once, for that method and path
// only.
func (c *Client) OperatorToken(method, path string) (string, error) {
	return bearer.IssuePurpose(c.Key, c.Origin, bearer.OperatorPurpose(method, path), clock.Or(c.Clock).Now(), bearer.OperatorTTL)
}

// Admit admits agent on the relay (POST /operator/agents/{did}/admit): it
// leaves probation at its next link.
func (c *Client) Admit(ctx context.Context, agent string) error {
	path := "/operator/agents/" + url.PathEscape(agent) + "/admit"
	tok, err := c.OperatorToken(http.MethodPost, path)
	if err != nil {
		return err
	}
	status, raw, err := c.do(ctx, http.MethodPost, c.Origin+path, tok)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		var ans QueueAnswer // the same error members
		json.Unmarshal(raw, &ans)
		return fmt.Errorf("relay answered %d %s: %s", status, http.StatusText(status), ans.reason(raw))
	}
	return nil
}

// reason is why the relay refused, from its answer or its first 200 bytes.
func (q QueueAnswer) reason(raw []byte) string {
	switch {
	case q.Message != "":
		return q.Error + ": " + q.Message
	case q.Detail != "":
		return q.Error + ": " + q.Detail
	}
	return strings.TrimSpace(string(raw[:min(len(raw), 200)]))
}

// do makes one request with the token and returns the status and body.
func (c *Client) do(ctx context.Context, method, u, tok string) (int, []byte, error) {
	return c.send(ctx, method, u, tok, nil)
}

// send is do with a request body (none when nil).
func (c *Client) send(ctx context.Context, method, u, tok string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return resp.StatusCode, ans, err
}
