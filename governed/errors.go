package governed

import (
	"errors"
	"fmt"
)

// Reason is the machine-readable cause of a rejection, for operators.
type Reason uint8

// The rejection reasons, one per receiver check (draft Section 8.1) plus
// signature-not-by-issuer, which refines signature-invalid.
const (
	// ReasonMalformed: the object fails structural validation (check 1).
	ReasonMalformed Reason = iota + 1
	// ReasonSignatureInvalid: the signature does not verify under the
	// issuer's key (check 2).
	ReasonSignatureInvalid
	// ReasonSignatureNotByIssuer: the signature verifies under the key of
	// another known party, not the issuer's (check 2).
	ReasonSignatureNotByIssuer
	// ReasonSenderMismatch: issuerDid is not the MLS sender (check 3).
	ReasonSenderMismatch
	// ReasonExpired: now is at or after the effective expiry (check 4).
	ReasonExpired
	// ReasonReplay: (issuerDid, id) was admitted before (check 5).
	ReasonReplay
	// ReasonPurposeNotPermitted: the purpose is not in the receiver's
	// allowlist (check 6).
	ReasonPurposeNotPermitted
)

var reasonNames = map[Reason]string{
	ReasonMalformed:            "malformed",
	ReasonSignatureInvalid:     "signature-invalid",
	ReasonSignatureNotByIssuer: "signature-not-by-issuer",
	ReasonSenderMismatch:       "sender-mismatch",
	ReasonExpired:              "expired",
	ReasonReplay:               "replay",
	ReasonPurposeNotPermitted:  "purpose-not-permitted",
}

// String returns the reason as the conformance vectors spell it, such as
// "signature-invalid".
func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

var (
	// ErrRejected is what a remote sender may be told about any rejection
	// (see Outward). Every *RejectError matches it with errors.Is.
	ErrRejected = errors.New("governed: object rejected")
	// ErrProcessing is what a remote sender is told when the receiver
	// failed for a reason of its own (a store error), not the object's.
	ErrProcessing = errors.New("governed: object could not be processed")
)

// RejectError is a rejected object: the check that failed and why.
type RejectError struct {
	Reason Reason
	// Detail says what exactly failed, for operators. It names members
	// and limits, never payload contents.
	Detail string
}

func (e *RejectError) Error() string {
	return "governed: rejected (" + e.Reason.String() + "): " + e.Detail
}

// Is makes every *RejectError match ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

func reject(r Reason, format string, args ...any) error {
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the reason of a rejection, or 0 when err is not one.
func ReasonOf(err error) Reason {
	var e *RejectError
	if errors.As(err, &e) {
		return e.Reason
	}
	return 0
}

// Outward returns the coarse error a remote sender may see for err: nil
// for nil, ErrRejected for any rejection, ErrProcessing for anything else.
// It deliberately drops the reason (draft Section 8.4).
func Outward(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrRejected):
		return ErrRejected
	}
	return ErrProcessing
}
