package mls

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// Errors of codecs, the ratchet tree, TreeKEM, proposals and commits. Each
// sentinel says when it is returned.
var (
	// ErrMalformed is matched (errors.Is) by every *ParseError: the input
	// does not decode as the RFC 9420 structure it should be, in the
	// presentation language of RFC 9420, Section 2.1.
	ErrMalformed = errors.New("mls: malformed message")

	// ErrUnsupportedCipherSuite is returned when a message, KeyPackage or
	// group names a cipher suite other than 0x0001 (RFC 9420, Sections 5.1
	// and 17.1).
	ErrUnsupportedCipherSuite = errors.New("mls: unsupported cipher suite")

	// ErrInvalidSignature is returned when a LeafNode, KeyPackage or other
	// signed object does not verify (RFC 9420, Section 5.1.2).
	ErrInvalidSignature = errors.New("mls: invalid signature")

	// ErrInvalidLeafNode is returned when a LeafNode fails the checks of RFC
	// 9420, Section 7.3 (other than its signature).
	ErrInvalidLeafNode = errors.New("mls: invalid leaf node")

	// ErrInvalidKeyPackage is returned when a KeyPackage fails the checks of
	// RFC 9420, Section 10.1.
	ErrInvalidKeyPackage = errors.New("mls: invalid key package")

	// ErrLifetime is returned when a LeafNode's lifetime does not contain the
	// current time (RFC 9420, Section 7.3), or is longer than the policy
	// allows (Config.MaxLifetime, ours).
	ErrLifetime = errors.New("mls: leaf node lifetime not valid now")

	// ErrInvalidTree is returned when a ratchet tree fails validation: wrong
	// shape, bad tree hash, parent-hash chains or unmerged leaves (RFC 9420,
	// Sections 7.8, 7.9 and 12.4.3.1).
	ErrInvalidTree = errors.New("mls: invalid ratchet tree")

	// ErrInvalidUpdatePath is returned when an UpdatePath does not fit the
	// tree or its keys do not match the decrypted path secrets (RFC 9420,
	// Sections 7.5 and 7.6).
	ErrInvalidUpdatePath = errors.New("mls: invalid update path")

	// ErrInvalidProposal is returned when a proposal or a committed
	// proposal list is invalid (RFC 9420, Sections 12.1 and 12.2).
	ErrInvalidProposal = errors.New("mls: invalid proposal")

	// ErrUnknownProposal is returned when a Commit refers to a proposal
	// (by reference, RFC 9420, Section 12.4) that this member has not
	// received in the epoch.
	ErrUnknownProposal = errors.New("mls: commit refers to an unknown proposal")

	// ErrInvalidCommit is returned when a Commit is invalid for a reason
	// other than its proposal list: a missing path, a wrong confirmation
	// tag, a sender that may not commit (RFC 9420, Section 12.4).
	ErrInvalidCommit = errors.New("mls: invalid commit")

	// ErrEpochMismatch is returned when a message is not for the group's
	// current epoch (RFC 9420, Sections 12.1 and 12.4.2).
	ErrEpochMismatch = errors.New("mls: epoch mismatch")

	// ErrWrongGroup is returned when a message carries another group's ID
	// (the group_id of RFC 9420, Section 6).
	ErrWrongGroup = errors.New("mls: message for another group")

	// ErrNotMember is returned when this client is no longer a member of the
	// group (a Commit removed it, RFC 9420, Section 12.4.2) and is asked to
	// act in it.
	ErrNotMember = errors.New("mls: not a member of the group")

	// ErrMissingPSK is returned when a PreSharedKey proposal or a Welcome
	// names a PSK this client does not have (RFC 9420, Sections 12.4.2 and
	// 12.4.3.1).
	ErrMissingPSK = errors.New("mls: pre-shared key not available")

	// ErrReInitPending is returned for any send after a Commit with a ReInit
	// proposal: the group must be reinitialised (RFC 9420, Section 11.2).
	ErrReInitPending = errors.New("mls: group is being reinitialised")
)

// A ParseError reports input that does not decode as the named RFC 9420
// structure. It matches ErrMalformed with errors.Is. The error type is this
// package's; the structures and field names are those of RFC 9420.
//
// Decoders fill in Field and Offset, so that the message says what failed
// and where: "mls: KeyPackage.leaf_node.signature_key at offset 57:
// truncated vector, need 32 bytes, have 3".
type ParseError struct {
	// Struct is the RFC 9420 structure being decoded, e.g. "Welcome".
	Struct string
	// Field is the path of RFC 9420 field names, within Struct, of the
	// field that failed to decode, e.g. "secrets[1].new_member" (an index
	// is that of a vector element). It is empty when the failure is not
	// in one field, such as trailing bytes.
	Field string
	// Offset is the offset in the input of the first byte of Field (or of
	// the trailing bytes), or -1 if unknown.
	Offset int
	// Err describes what was wrong.
	Err error
}

// Error returns "mls: Struct.Field at offset Offset: Err", or "mls:
// parsing Struct: Err" when the offset is unknown.
func (e *ParseError) Error() string {
	if e.Offset < 0 {
		return "mls: parsing " + e.Struct + ": " + e.Err.Error()
	}
	where := e.Struct
	if e.Field != "" {
		where += "." + e.Field
	}
	return "mls: " + where + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Err.Error()
}

// Unwrap returns the underlying reason.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMalformed.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// errorf returns a *ParseError for the named structure, with no field or
// offset: for checks made after the structure decoded.
func errorf(structName, format string, args ...any) error {
	return &ParseError{Struct: structName, Offset: -1, Err: fmt.Errorf(format, args...)}
}

// Errors of message protection, the key schedule and secret tree, Welcome
// and external joins, group state. Each sentinel says when it is returned.
var (
	// ErrDecryption is the one opaque error of every failed decryption or
	// MAC check (a PrivateMessage layer, a membership tag, a Welcome, an
	// HPKE ciphertext): which check failed is not revealed (RFC 9420,
	// Section 16.1 discusses what a failure can leak).
	ErrDecryption = errors.New("mls: decryption failed")

	// ErrGenerationUsed is returned for a PrivateMessage whose ratchet
	// generation was already used (a replay) or whose key was deleted
	// (RFC 9420, Section 9.2).
	ErrGenerationUsed = errors.New("mls: message key already used or deleted")

	// ErrGenerationTooFar is returned for a PrivateMessage whose generation
	// is beyond the out-of-order window (RFC 9420, Section 9.2 lets a
	// member bound how many keys it derives ahead).
	ErrGenerationTooFar = errors.New("mls: message generation too far ahead")

	// ErrUnknownSender is returned when a message names a sender leaf that
	// is blank or outside the tree, or an external sender index the group
	// does not have (RFC 9420, Sections 6.3.2 and 12.1.8.1).
	ErrUnknownSender = errors.New("mls: unknown sender")

	// ErrNotForUs is returned by OpenWelcome and Join when the Welcome has
	// no entry for the KeyPackage (RFC 9420, Section 12.4.3.1).
	ErrNotForUs = errors.New("mls: welcome is not for this key package")

	// ErrInvalidWelcome is returned when a Welcome or GroupInfo fails a
	// check of RFC 9420, Section 12.4.3.1 other than decryption: a wrong
	// confirmation tag, a tree that does not match the GroupInfo, no leaf
	// for our KeyPackage, path secrets that do not match the tree.
	ErrInvalidWelcome = errors.New("mls: invalid welcome")
)

// An InternalError is a panic inside this package, recovered so that a
// daemon fed untrusted input does not crash on one message: the input
// reached a state the code did not expect. It is a bug in this package,
// not a verdict on the input. Error returns one line; Stack keeps the
// goroutine's stack at the panic for the bug report. Recovered panics in a
// Group also become its sticky error (Group.Err). Match it with errors.As.
type InternalError struct {
	// Op says what was being done: "group operation" or "processing input
	// outside a group".
	Op string
	// Value is the value the code panicked with.
	Value any
	// Stack is the stack of the panicking goroutine (runtime/debug.Stack,
	// taken in the deferred recover).
	Stack []byte
}

// Error returns "mls: internal error during Op: Value", on one line.
func (e *InternalError) Error() string {
	msg := strings.ReplaceAll(fmt.Sprint(e.Value), "\n", " ")
	return "mls: internal error during " + e.Op + ": " + msg
}

// Unwrap returns the panic value if it is an error (a runtime.Error, for
// example), so that errors.Is and errors.As see through it.
func (e *InternalError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// newInternalError records the panic value r with the current stack. It
// must be called from the deferred function that recovered r, so that the
// stack still holds the panicking frames.
func newInternalError(op string, r any) *InternalError {
	return &InternalError{Op: op, Value: r, Stack: debug.Stack()}
}
