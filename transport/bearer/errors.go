package bearer

import "errors"

// Sentinels of Verify, one per check. Each is returned wrapped in an *Error.
var (
	// ErrMissing is returned when there is no bearer token at all: an empty
	// header, or an Authorization header of another scheme.
	ErrMissing = errors.New("bearer: missing token")
	// ErrMalformed is returned when the token is not "atom.<claims>.<sig>",
	// a part is not base64url, the claims are not a JSON object, or a claim
	// has the wrong type or value (v != 1, did not an Ed25519 did:key,
	// iat or exp not integer seconds).
	ErrMalformed = errors.New("bearer: malformed token")
	// ErrExpired is returned when exp is before now.
	ErrExpired = errors.New("bearer: token expired")
	// ErrNotYetValid is returned when iat is later than now plus the skew.
	ErrNotYetValid = errors.New("bearer: token not yet valid")
	// ErrLifetime is returned when exp − iat exceeds the maximum lifetime.
	ErrLifetime = errors.New("bearer: token lifetime too long")
	// ErrAudience is returned when aud is not this verifier's origin, or the
	// verifier has no audience configured.
	ErrAudience = errors.New("bearer: audience mismatch")
	// ErrPurpose is returned when the purpose claim is not the Verifier's:
	// a link token presented to an A2A endpoint, or a token without the
	// link purpose presented to the device link.
	ErrPurpose = errors.New("bearer: wrong purpose")
	// ErrNonCanonical is returned when the claim bytes are not the
	// canonical serialisation of the claims.
	ErrNonCanonical = errors.New("bearer: non-canonical claims")
	// ErrSignature is returned when the signature does not verify under the
	// key of the claimed DID.
	ErrSignature = errors.New("bearer: bad signature")
)

// Error is a failed token verification. It wraps the sentinel of the check
// that failed.
type Error struct {
	// Check is the sentinel of the failed check, such as ErrExpired.
	Check error
	// Detail is the reference implementation's message for the failure,
	// such as "transport token: expired". It is safe to send to the caller
	// and is what bearerhttp.WriteUnauthorized puts in the 401 answer.
	Detail string
	// Reason adds specifics for operators' logs (the times compared, the
	// audience seen). It never contains key material or the token.
	Reason string
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return e.Detail
	}
	return e.Detail + ": " + e.Reason
}

// Unwrap returns the sentinel of the failed check.
func (e *Error) Unwrap() error { return e.Check }

func fail(check error, detail, reason string) error {
	return &Error{Check: check, Detail: detail, Reason: reason}
}
