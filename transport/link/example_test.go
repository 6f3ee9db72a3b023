package link_test

import (
	"context"
	"log"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// A device's wake: link, publish the state with a card signed for the
// bounds in force, drain what was queued, then stay linked for live
// requests until the window closes.
func Example() {
	ctx := context.Background()
	key, _ := did.Generate(nil)
	c, err := link.Dial(ctx, link.Config{
		RelayURL: "https://relay.example",
		Key:      key,
		Handler: func(ctx context.Context, req wire.Request) wire.Response {
			// Hand req.Body (a JSON-RPC request from req.From) to the
			// agent's A2A server and return its answer.
			return wire.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}
		},
	})
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	bounds := c.Hello().Clamp(nil)
	card, _ := a2a.BuildCard(a2a.CardOptions{Name: "greenhouse", BaseURL: "https://relay.example/a/" + key.DID().String(), OfflineMode: "hourly_wake", Bounds: &bounds})
	signed, _ := a2a.SignCard(card, key)
	if _, err := c.Publish(ctx, wire.State{Mode: "hourly_wake", Card: signed}); err != nil {
		log.Print(err)
		return
	}
	n, err := c.Drain(ctx, 50, func(ctx context.Context, recs []wire.Record) error {
		// Decrypt, run the six checks and commit the replay cache, MLS
		// state and ledger in one transaction; only then return nil, which
		// acknowledges the batch.
		return nil
	})
	log.Print(n, err)
}
