// Package audit is the relay's audit log: a bounded, durable record of
// the operator actions the relay sees (console logins and logouts,
// admissions, queue purges, the signed commands its embedded broker
// carries), newest first. Store is the interface the relay
// (transport/relay) and its console use; Bolt keeps the log in a bbolt
// file, store/jsstore's Audit in a JetStream stream. Both keep the last
// Max records and count the ones they dropped; audittest is the contract
// both pass. docs/operations.md, "The audit log", describes it for
// operators.
//
// A record never holds a secret: no token, no cookie, no command
// payload beyond the command's name, id and purpose.
package audit

import (
	"context"
	"errors"

	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// DefaultMax is how many records a store keeps when its Max is zero.
const DefaultMax = 10000

// MaxPage caps the records one List returns.
const MaxPage = 500

// The actions of a record.
const (
	ActionLogin   = "login"
	ActionLogout  = "logout"
	ActionAdmit   = "admit"
	ActionPurge   = "purge"
	ActionCommand = "device-command"
	// ActionRollout is a rollout started, paused, resumed or aborted
	// (its Detail names which and the rollout's id).
	ActionRollout = "rollout"
	// ActionUpdate is an upload to the relay's update repository (root,
	// blob or targets; docs/updates.md).
	ActionUpdate = "update-upload"
	// ActionTenant is the host setting a tenant's quotas (its Detail
	// names the tenant and the quotas; docs/tenants.md).
	ActionTenant = "tenant"
	// ActionUpdateRemove is a blob removed from a tenant's update
	// repository (docs/tenants.md, "Update repositories"); Detail names
	// the blob and its bytes.
	ActionUpdateRemove = "update-remove"
)

// The outcomes of a record.
const (
	OK      = "ok"
	Refused = "refused"
)

// Record is one operator action, as the operator API carries it
// (operatorapi.AuditRecord, which torporctl reads too): the log keeps it
// in the same JSON.
type Record = operatorapi.AuditRecord

// Page is one List answer.
type Page struct {
	// Records are newest first.
	Records []Record
	// Dropped counts the records the bound removed since the log began.
	Dropped uint64
	// Next is the Before of the following page; zero at the end.
	Next uint64
}

// Store keeps the audit log. Append assigns the record's Seq and drops
// the oldest records beyond the store's bound. List returns up to limit
// records (at most MaxPage) with a Seq below before (every record when
// before is zero), newest first.
type Store interface {
	Append(ctx context.Context, r Record) error
	List(ctx context.Context, before uint64, limit int) (Page, error)
	Close() error
}

// ErrEmptyAction is returned by Append for a record without an action.
var ErrEmptyAction = errors.New("audit: record without an action")

// Limit returns limit clamped to 1..MaxPage (MaxPage for zero or less).
func Limit(limit int) int {
	if limit <= 0 || limit > MaxPage {
		return MaxPage
	}
	return limit
}

// Check refuses a record Append must not store.
func Check(r Record) error {
	if r.Action == "" {
		return ErrEmptyAction
	}
	return nil
}
