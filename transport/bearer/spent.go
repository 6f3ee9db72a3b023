package bearer

import (
	"errors"
	"time"
)

// PurposeOperator starts the purpose of a token for the relay's operator
// endpoints (/operator/...): OperatorPurpose binds it to one request's
// method and path, and the relay accepts it once (store/shared.Spent).
const PurposeOperator = "torpor-operator"

// OperatorPurpose is the purpose claim of an operator token for the
// request method (GET, DELETE, POST) to path, the request's escaped path
// without its query ("/operator/queue/did:key:z6Mk…"): a token minted to
// list a queue cannot purge it, nor admit a device.
func OperatorPurpose(method, path string) string {
	return PurposeOperator + " " + method + " " + path
}

// OperatorTTL is the lifetime torporctl gives an operator token, and
// MaxOperatorLifetime the longest the relay accepts.
const (
	OperatorTTL         = time.Minute
	MaxOperatorLifetime = 5 * time.Minute
)

// ErrReplayed wraps the refusal of a single-use token presented a second
// time (the relay's memory of them is store/shared).
var ErrReplayed = errors.New("bearer: token already used")
