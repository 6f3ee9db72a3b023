package manage

import (
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
)

// Command is an admitted command: its Governed Object passed the receiver
// checks, its operator is allowed, it names this device and its sequence
// number is new. Device.Execute gets it.
type Command struct {
	// ID is the command object's id.
	ID       string
	Operator did.DID
	Seq      uint64
	Op       string
	// Args is a pointer to the argument type of Op (command.SetModeArgs
	// for set-mode, ...), nil for operations without arguments.
	Args     any
	IssuedAt time.Time
	// Expires is the command's effective expiry.
	Expires time.Time
	// Key is the command's key in the idempotency ledger.
	Key string
}

// LedgerKey returns the idempotency-ledger key of command id from operator.
func LedgerKey(operator did.DID, id string) string {
	return "torpor:command " + operator.String() + " " + id
}

// rejection is a command refused before it ran. Returned from a bbolt
// transaction function, it rolls the transaction back: a refused command
// leaves no trace in the replay cache, the sequence table or the ledger.
type rejection struct {
	outcome command.Outcome // command.OutcomeRejected or OutcomeIndeterminate
	reason  string
	detail  string
	// A copy of a command already admitted (MQTT QoS 1 delivers at least
	// once, and a broker may replay): running says the first copy runs
	// now and its reply is still to come; receipt is the first copy's
	// signed reply when it completed.
	running bool
	receipt []byte
}

func (r *rejection) Error() string {
	return "manage: command " + string(r.outcome) + " (" + r.reason + "): " + r.detail
}

func reject(reason, format string, args ...any) *rejection {
	return &rejection{outcome: command.OutcomeRejected, reason: reason, detail: fmt.Sprintf(format, args...)}
}

// truncate shortens what a peer sent for a message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
