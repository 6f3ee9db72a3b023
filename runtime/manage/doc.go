// Package manage is what operators' commands mean on a device and how they
// are made: the command vocabulary (operations, their arguments and
// checks), admission, the executor, and the operator's side (Operator,
// SignCommand, NextSeq) that torporctl uses. The transport — connection,
// persistent session, inbox, backlog barrier, signed replies — is
// transport/mqtt's; Server is its mqtt.Handler. Commands is the Device
// that carries the commands out on a runtime.Agent, through the Pipeline's
// operator operations, and keeps the MQTT session in step with the duty
// cycle (runtime.Management). docs/mqtt.md documents every payload.
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
//  3. it is a well-formed command (known op, valid arguments, a lifetime
//     within Config.MaxCommandTTL);
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
// admission (transport/mqtt's backlog barrier), so the rule does not let
// the broker's redelivery order decide which commands run.
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
