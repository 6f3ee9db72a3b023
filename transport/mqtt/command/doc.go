// Package command is the operators' command vocabulary and the operator's
// side of the management channel: the operations and their arguments
// (DecodeArgs checks them as a device does), the command object (Sign,
// ParsePayload), the per-operator sequence numbers (NextSeq, and Order for
// a device's backlog), the device's replies (Reply, VerifyReply) and the
// Operator client that torporctl uses to publish commands and read
// replies, statuses and events, with the operator's local state: the pins
// of device names to DIDs (KnownDevices) and the last sequence number used
// per device (SeqFile). It imports nothing from runtime: what a
// command does on a device, and whether the device admits it, is
// runtime/manage's. docs/mqtt.md documents every payload.
//
// A command is a Governed Object (draft-chapman-a2a-mls-03 Section 5) with
// purpose torpor:command, signed by an operator DID; its payload names
// the device it is for, so it cannot be redirected to another device by
// whoever controls the broker.
//
// # Sequence numbers
//
// A command carries a per-operator sequence number. The rule: the device
// rejects, as out-of-sequence, a command whose number is not greater than
// the last one it accepted from the same operator; gaps are allowed (a
// command that expired or was never delivered leaves one). So an older
// command never takes effect after a newer one, whatever order the broker
// delivers them in, and a replayed command is refused even once its id has
// left the replay cache. Operators pick numbers with NextSeq: the issuance
// time in Unix milliseconds, or one more than the last number they used if
// that is not greater. No coordination is needed between operators (each
// has its own sequence) or between machines holding one operator key, as
// long as their clocks are roughly right; torporctl also keeps the last
// number it used per key and device, so a clock that steps back does not
// stall it. The backlog a connection brings is sorted by sequence before
// admission (Order, through transport/mqtt's backlog barrier), so the rule
// does not let the broker's redelivery order decide which commands run.
package command
