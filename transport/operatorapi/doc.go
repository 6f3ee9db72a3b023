// Package operatorapi is the relay's operator HTTP API as its clients see
// it: the documents and a Client that fetches them with a DID Bearer token
// of an operator's key. The fleet console's JSON (GET /fleet/api/devices
// and /fleet/api/devices/{did}: Fleet, the view of every device with its
// state, schedule, pulse, queue, KeyPackage pool and what it said in its
// signed status) is built and served by transport/relay/console with these
// types; the queue API (GET and DELETE /operator/queue/{agent}:
// QueueAnswer) is served by transport/relay. torporctl fleet and torporctl
// queue and device admit use the Client. Each call to the operator
// endpoints (/operator/...) carries a token of its own
// (Client.OperatorToken: bearer.OperatorPurpose bound to the request's
// method and path), which the relay accepts once. The package is a leaf apart from the relay, so
// that the operator's tool links no relay. docs/operations.md describes
// both APIs for operators.
package operatorapi
