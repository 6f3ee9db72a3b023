// Package bearer issues and verifies DID Bearer transport tokens, the
// caller authentication of draft-chapman-a2a-mls-03 Section 7.9 in the wire
// format of the Atom reference implementation:
//
//	Authorization: Bearer atom.<b64url(claims)>.<b64url(signature)>
//
// claims is the canonical JSON (RFC 8785: sorted keys, no whitespace) of
// {"aud","did","exp","iat","v"} and signature is the Ed25519 signature
// (RFC 8032) of exactly those claim bytes by the key of the did:key in
// "did". Nothing else is signed; the token is not a JWS. Both parts are
// base64url without padding (RFC 4648 Section 5).
//
// # Verification
//
// Verifier.Verify runs the reference's checks in the reference's order and
// adds two of its own (5 and 7):
//
//  1. the "atom." prefix and the two dot-separated parts;
//  2. base64url and JSON decoding, and the claim types (v == 1, did a
//     did:key Ed25519 identifier, aud a string, iat and exp integer Unix
//     seconds);
//  3. exp: the token is expired when exp < now (exp == now is still valid,
//     as in the reference);
//  4. iat: not yet valid when iat > now + Skew (60 s);
//  5. lifetime: exp − iat must not exceed MaxLifetime (10 minutes). The
//     reference has no such cap, so a stolen token it issued with a long
//     TTL would stay usable indefinitely; ours bounds that window. The
//     reference's own tokens live 5 minutes and pass;
//  6. aud: equal to the Verifier's Audience after both are normalised to an
//     origin (see NormalizeAudience);
//  7. purpose (ours): the optional "purpose" claim must equal the
//     Verifier's Purpose. The reference's tokens have none, and the A2A
//     endpoints (Purpose empty) accept only those; a device link token
//     (IssueLink) carries "purpose":"torpor-link" and a random "jti", and
//     only the device link's Verifier accepts it. A link token caught in
//     transit so cannot be used to send as the device, nor an A2A token
//     to open its link. An operator token (OperatorPurpose) carries
//     "torpor-operator METHOD PATH": it is good for that one request to
//     the relay's operator endpoints, and the relay spends it (store/shared);
//  8. the claim bytes must equal the canonical form of the claims, so that
//     exactly one byte string is signed for one set of claims;
//  9. the Ed25519 signature under the key derived from did (draft Section
//     4.1: never resolved over a network).
//
// With Verifier.Signatures set, a token that passed once is remembered by
// its exact bytes with its decoded claims, and the checks that depend on
// those bytes alone (1, 2, 8 and 9) are not run again for it; checks 3–7
// (times, audience, purpose) still run on every call (SigCache).
//
// Every failure is an *Error that wraps one sentinel (ErrMissing,
// ErrMalformed, ErrExpired, ErrNotYetValid, ErrLifetime, ErrAudience,
// ErrPurpose, ErrNonCanonical, ErrSignature) so callers can tell with
// errors.Is which check failed. Its Detail is the reference's message
// ("transport token: expired"), which is what bearerhttp.WriteUnauthorized
// sends back in the 401 body, so a reference client sees the answers it
// expects. The HTTP side (that 401 and a middleware) is package bearerhttp
// (transport/bearer/bearerhttp), apart so that torpor-agent, which issues
// tokens and serves no HTTP, does not link net/http.
//
// Verify keeps no replay cache (nor does the reference): an A2A token is a
// short-lived proof of the caller's DID, not an authorisation of one
// request, and replay of what the request carries is the business of the
// Governed Object replay cache. The device link is stricter: its server
// (transport/link/server) accepts each link token once and then requires
// a signature by the device key over a fresh challenge, so a link token is
// worth nothing without the key (docs/security.md, "The device link").
package bearer
