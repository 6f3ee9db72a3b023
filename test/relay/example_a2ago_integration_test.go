//go:build integration

package relay

// The Go client example of docs/a2a.md, with the official A2A Go SDK
// (github.com/a2aproject/a2a-go v0.3.3, A2A 0.3). TestA2AGoClient runs it;
// TestDocsIncludeExamples checks that docs/a2a.md shows it as it is here.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// docs/a2a.md: begin Go

// Asleep is what the relay answers for a device that sleeps: the message was
// stored (Queued) and the device is back in about RetryAfterSec seconds.
type Asleep struct {
	Queued        bool `json:"queued"`
	RetryAfterSec int  `json:"retryAfterSec"`
}

// withToken adds the DID Bearer token to every request and keeps the body of a
// 503 answer, which a2a-go reports only as "unexpected HTTP status".
type withToken struct {
	token  string
	asleep *Asleep
}

func (b *withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		b.asleep = &Asleep{}
		json.Unmarshal(body, b.asleep)
	}
	return resp, err
}

// Send sends one data part (a Governed Object part's data) to the agent
// whose A2A 0.3 JSON-RPC endpoint is url. For a sleeping device it returns
// the SDK's error and what the relay answered.
func Send(ctx context.Context, url, token string, data map[string]any) (a2a.SendMessageResult, *Asleep, error) {
	b := &withToken{token: token}
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]a2a.AgentInterface{{URL: url, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: b}))
	if err != nil {
		return nil, nil, err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: data})
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	return res, b.asleep, err
}

// Endpoint reads the agent's card at base (<relay>/a/<did>) and returns the
// URL of its A2A 0.3 JSON-RPC interface. The card is an A2A 1.0 card, which
// a2a-go v0.3.3's card resolver cannot read, so it is read as JSON here.
func Endpoint(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/.well-known/agent-card.json", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var card struct {
		SupportedInterfaces []struct{ URL, ProtocolBinding, ProtocolVersion string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		return "", fmt.Errorf("card: %v", err)
	}
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == "JSONRPC" && i.ProtocolVersion == "0.3" {
			return i.URL, nil
		}
	}
	return "", fmt.Errorf("the card at %s lists no A2A 0.3 JSON-RPC interface", base)
}

// docs/a2a.md: end Go
