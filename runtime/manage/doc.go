// Package manage is what operators' commands do on a device: admission
// (the checks below, in one bbolt transaction) and the executor. The
// command vocabulary, the command object, sequence numbers, replies and
// the operator's side (Operator, which torporctl uses) are
// transport/mqtt/command's, which imports nothing from runtime; the
// transport — connection, persistent session, inbox, backlog barrier,
// signed replies — is transport/mqtt's; Server is its mqtt.Handler.
// Commands is the Device that carries the commands out on a runtime.Agent,
// through the Pipeline's operator operations, and keeps the MQTT session
// in step with the duty cycle (runtime.Management). docs/mqtt.md documents
// every payload.
//
// # Trust
//
// The broker is a mailbox, not an authority: whoever controls it (or
// anyone, on the embedded broker, which allows anonymous clients) can
// publish anything on any topic. So a command is a Governed Object
// (draft-chapman-a2a-mls-03 Section 5) with purpose torpor:command, signed
// by an operator DID, and the device admits it only if, in order:
//
//  1. it passes the six receiver checks of draft Section 8.1 (structure,
//     signature, sender binding — none, MQTT carries it unencrypted —,
//     expiry, replay against the device's bbolt replay cache, purpose);
//  2. its issuer is in the device's operator allowlist;
//  3. it is a well-formed command (command.ParsePayload: known op, valid
//     arguments) with a lifetime within Config.MaxCommandTTL;
//  4. it names this device's DID, so it cannot be redirected to another
//     device;
//  5. its sequence number is greater than the last one the device accepted
//     from that operator (below).
//
// All five pass → one bbolt transaction records the replay entry, the new
// sequence number, a reservation of the command's ledger key (LedgerKey,
// store/ledger) and the inbox entry marked admitted; any failure rolls it
// back, so a refused command leaves no trace. Refusals are answered with
// their reason within Config.RejectionsPerMinute; the rest are counted
// (Stats). The device reveals rejection reasons because the reply topic is
// the operators' diagnostic channel and the reasons concern the command,
// not the device's secrets.
//
// # Sequence numbers
//
// A command carries a per-operator sequence number (command.NextSeq). The
// device rejects, as out-of-sequence, a command whose number is not
// greater than the last one it accepted from the same operator (LastSeq
// reads it); gaps are allowed. The backlog a connection brings is sorted
// by sequence before admission (Server.Order, command.Order), so the rule
// does not let the broker's redelivery order decide which commands run.
// The package documentation of transport/mqtt/command gives the rule in
// full.
//
// # Exactly what runs
//
// Admission commits in one transaction; Device.Execute runs; then the
// ledger completion, the signed reply queued for publication and the inbox
// entry's removal commit in a second one. A crash before the second commit
// leaves the ledger key reserved, which reads indeterminate after the
// restart, and the restarted device answers "indeterminate" with the key
// an operator reconciles, without running the command again (the Autonomy
// Envelope's rule: no automatic retry of an effect that may have
// happened). A message the broker delivers twice is answered as a replay,
// with the original outcome in the detail.
//
// Commands run one at a time in admission order, except halt, which runs
// at once, concurrently with a command in progress, so that it reaches
// work in flight (the owner's explicit halt is immediate).
package manage
