package drain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a"
)

// Causes of a rejected or deferred record or object, for operators (draft
// Section 8.4: distinguishable by cause). The six receiver checks report
// governed's reasons (malformed, signature-invalid, signature-not-by-issuer,
// sender-mismatch, expired, replay, purpose-not-permitted); the part
// reader reports a2a's (media-type-conflict, media-type-not-matched,
// malformed). The drain adds:
const (
	// CauseOpaque: the record is not a JSON-RPC message submission (not
	// JSON, a duplicate member, nested too deep, another method), so
	// nothing here will ever process it; it is acknowledged, so the relay
	// deletes it, and reported.
	CauseOpaque = "opaque"
	// CauseMLSDeferred: an MLS message the sessions cannot process yet;
	// the record stays queued until its TTL.
	CauseMLSDeferred = "mls-deferred"
	// CauseUntrusted: the agent has no trusted time to judge expiry by
	// (Config.Expiry); the record stays queued and nothing of it is
	// judged.
	CauseUntrusted = "no-trusted-time"
	// CauseNoObject: a message with no part the agent can authenticate
	// (text, files, an empty handshake): drained, never delivered.
	CauseNoObject = a2a.ReasonNoObject
	// CausePlaintext: an unencrypted Governed Object where the
	// configuration allows only MLS-encrypted ones.
	CausePlaintext = "plaintext-not-allowed"
	// CauseNoSessions: an MLS part but no MLS sessions configured.
	CauseNoSessions = "mls-unavailable"
	// CauseMLS: the sessions refused a handshake or wire message
	// (decryption failed, wrong epoch, credential binding).
	CauseMLS = "mls-failed"
	// CauseBadPlaintext: decrypted application data without an object.
	CauseBadPlaintext = "bad-plaintext"
	// CauseNotOwner: a control purpose (torpor:*) from someone not the
	// owner.
	CauseNotOwner = "not-owner"
	// CauseControl: an owner's control object the gate refused (stale
	// policy, unknown hold).
	CauseControl = "control-refused"
	// CauseBadAction: a consequential object whose payload the gate
	// cannot read (amount not an integer).
	CauseBadAction = "bad-action"
	// CauseNoRoute: an accepted object no handler is configured for.
	CauseNoRoute = "no-handler"
	// CauseHandOff: an accepted object its handler did not take (the
	// program failed, the socket refused); counted in HandOffFailed.
	CauseHandOff = "hand-off-failed"
)

// Report counts what one drain (or one batch) did.
type Report struct {
	Records   int // records seen
	Acked     int // records acknowledged (processed or rejected)
	Deferred  int // records left queued
	Objects   int // Governed Objects that reached the receiver checks
	Accepted  int // objects that passed all six checks
	Delivered int // objects handed to a handler (outcome recorded)
	// HandOffFailed counts hand-offs the handler failed (see
	// CauseHandOff); each has a Diagnostic.
	HandOffFailed int
	Held          int // consequential objects held for the owner
	Ran           int // consequential actions run
	Refused       int // actions refused by the ledger (duplicate, indeterminate)
	Control       int // owner control objects applied
	Handshake     int // MLS handshakes and commits applied
	// Rejected counts rejections by cause.
	Rejected map[string]int
	// Diagnostics describe each rejection and deferral (capped; see
	// MaxDiagnostics), for the operator's log.
	Diagnostics []Diagnostic
	// Time splits where the drain spent its time, on its clock.
	Time Timing
}

// Timing is where a drain spent its time. Commit includes the bbolt
// fsyncs of the batch transaction; Checks the six receiver checks
// (signature verification dominates); Open the MLS sessions (decryption,
// handshakes); Ack and Pull (set by the caller that pulls) the round trips
// to the relay; Notify the hand-offs and the transaction recording their
// outcomes.
type Timing struct {
	Pull   time.Duration
	Open   time.Duration
	Checks time.Duration
	Commit time.Duration
	Ack    time.Duration
	Notify time.Duration
}

func (t *Timing) add(o Timing) {
	t.Pull += o.Pull
	t.Open += o.Open
	t.Checks += o.Checks
	t.Commit += o.Commit
	t.Ack += o.Ack
	t.Notify += o.Notify
}

// MaxDiagnostics caps Report.Diagnostics; counters keep counting.
const MaxDiagnostics = 64

// Diagnostic is one rejection or deferral.
type Diagnostic struct {
	Seq    uint64
	Cause  string
	Detail string
}

func (r *Report) reject(seq uint64, cause, detail string) {
	if r.Rejected == nil {
		r.Rejected = map[string]int{}
	}
	r.Rejected[cause]++
	r.diag(seq, cause, detail)
}

func (r *Report) diag(seq uint64, cause, detail string) {
	if len(r.Diagnostics) < MaxDiagnostics {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Seq: seq, Cause: cause, Detail: detail})
	}
}

// Add adds o's counts to r.
func (r *Report) Add(o Report) {
	r.Records += o.Records
	r.Acked += o.Acked
	r.Deferred += o.Deferred
	r.Objects += o.Objects
	r.Accepted += o.Accepted
	r.Delivered += o.Delivered
	r.HandOffFailed += o.HandOffFailed
	r.Held += o.Held
	r.Ran += o.Ran
	r.Refused += o.Refused
	r.Control += o.Control
	r.Handshake += o.Handshake
	for k, v := range o.Rejected {
		if r.Rejected == nil {
			r.Rejected = map[string]int{}
		}
		r.Rejected[k] += v
	}
	for _, d := range o.Diagnostics {
		r.diag(d.Seq, d.Cause, d.Detail)
	}
	r.Time.add(o.Time)
}

// RejectedTotal returns the number of rejections of every cause.
func (r *Report) RejectedTotal() int {
	n := 0
	for _, v := range r.Rejected {
		n += v
	}
	return n
}

// String summarises the report on one line.
func (r Report) String() string {
	causes := make([]string, 0, len(r.Rejected))
	for k, v := range r.Rejected {
		causes = append(causes, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(causes)
	return fmt.Sprintf("records=%d acked=%d deferred=%d objects=%d accepted=%d delivered=%d handOffFailed=%d held=%d ran=%d refused=%d control=%d handshake=%d rejected[%s]",
		r.Records, r.Acked, r.Deferred, r.Objects, r.Accepted, r.Delivered, r.HandOffFailed, r.Held, r.Ran, r.Refused, r.Control,
		r.Handshake, strings.Join(causes, " "))
}
