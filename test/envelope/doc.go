// Package envelope holds the Autonomy Envelope's end-to-end tests (build
// tag integration, docs/envelope.md): a principal's passport, attenuated
// by its agent for a sender, presented with torporctl send (and the Go
// sender library, for the chains torporctl refuses to present) to a
// sleeping torpor-agent through torpor-relay's queue, and judged by the
// device at its next wake against its owner's signed policy. The relay
// and the agent run on one scaled clock (--time-scale, --time-epoch), so
// that a passport's expiry passes between the send and the wake without
// the test sleeping.
package envelope
