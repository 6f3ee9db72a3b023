//go:build integration

package relay

// The Go client example of docs/a2a.md, with the official A2A Go SDK
// (github.com/a2aproject/a2a-go v0.3.3, A2A 0.3) and the module's
// transport/a2a/a2arelay. TestA2AGoClient runs it; TestDocsIncludeExamples
// checks that docs/a2a.md shows it as it is here.

import (
	"context"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/torpor-dev/torpor/transport/a2a/a2arelay"
)

// docs/a2a.md: begin Go

// Connect reads the card of the agent at base (<relay>/a/<did>) with
// a2a-go's own resolver, which asks for no protocol version and so gets the
// card's A2A 0.3 view, and returns a client for the JSON-RPC endpoint the
// card names. Every request carries the DID Bearer token that token
// returns, and a2arelay.Transport turns the relay's error answers (400 or
// more) into an *a2arelay.Error in the SDK's error.
func Connect(ctx context.Context, base string, token func(*http.Request) (string, error)) (*a2aclient.Client, *a2a.AgentCard, error) {
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: &a2arelay.Transport{Token: token}}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	return client, card, err
}

// Send sends one data part (a Governed Object part's data) to the agent.
// Delivered, it returns the agent's answer (or its JSON-RPC error as err);
// otherwise the relay's answer: Queued (stored; the device is back in about
// RetryAfter), Asleep (not stored), Refused (Reason says why) or
// Unanswered.
func Send(ctx context.Context, client *a2aclient.Client, data map[string]any) (a2a.SendMessageResult, a2arelay.Result, error) {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: data})
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if r, ok := a2arelay.As(err); ok {
		return nil, r, nil
	}
	return res, a2arelay.Result{Kind: a2arelay.Delivered, Status: http.StatusOK}, err
}

// docs/a2a.md: end Go
