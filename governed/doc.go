// Package governed builds, signs and verifies Governed Objects, the signed
// message envelope of draft-chapman-a2a-mls-03 Section 5, and runs the six
// ordered receiver checks of Section 8.1.
//
// # Signed bytes
//
// The signature is Ed25519 (RFC 8032) over the RFC 8785 canonical form of
// the JSON object made of exactly the members version, id, issuerDid,
// issuedAt, semantic, payload and governance (Section 5.3), encoded as
// standard base64 with padding (Section 5.4; unpadded is accepted on
// input). Parse keeps the raw JSON of every member as it was received and
// canonicalises those raw members; nothing is normalised first. The
// reference implementation instead trims id and purpose and drops unknown
// members of semantic and governance before canonicalising, so an object
// that carries extra semantic members verifies here and fails there. Sign
// never produces such an object.
//
// # Structure (check 1)
//
// Parse enforces Sections 5.1 and 5.2 and the JSON Schema of the
// data-object extension: the nine members and no others; version the
// number 1; id a non-empty string; issuerDid an Ed25519 did:key (the key is
// derived from it, Section 4.1); issuedAt and expiresAt RFC 3339
// date-times; semantic an object whose schema is an absolute URI; payload
// an object; governance an object with a non-empty purpose, an optional
// ttlSeconds >= 0 and an optional expiresAt, and nothing else;
// signatureAlgorithm exactly "ed25519"; signature base64 of 64 bytes. The
// whole signed part must be I-JSON: duplicate member names, lone
// surrogates, invalid UTF-8 and out-of-range numbers are malformed, since
// two parsers could read different objects from such bytes.
//
// # Receiver checks (Section 8.1)
//
// Receiver.Accept runs, in order: structure, signature, MLS sender binding
// (when the caller passes the sender's DID), expiry, replay, purpose. The
// expiry is the earlier of issuedAt+ttlSeconds and expiresAt; an object is
// expired when now >= expiry. An object that declares neither gets
// Receiver.MaxLifetime (default 7 days) from issuedAt, so that a replay
// cache that retains ids that long suffices (Section 8.2). A declared
// expiry is capped at issuedAt plus Receiver.MaxExplicitLifetime (default
// 30 days), our own bound: the draft sets none. Parse refuses an id or a
// purpose with a control character in it.
//
// Replay is looked up at step 5 and purpose checked at step 6, as the draft
// orders them; the (issuerDid, id) pair is recorded only after all six
// checks pass, through the ReplayCache the caller passes, which writes in
// the caller's transaction. The reference checks purpose before replay and
// admits at that point; our order follows the draft, and recording last
// means an object refused for its purpose does not burn its id (a sender
// that fixes the purpose is not then refused as a replay, and an attacker
// cannot fill the cache with objects the receiver would never act on). An
// id counts as admitted only once the caller's transaction commits, so a
// crash between the checks and the commit loses nothing and admits
// nothing.
//
// # Rejection reasons
//
// Every rejection is a *RejectError with a Reason for operators:
// malformed, signature-invalid, signature-not-by-issuer, sender-mismatch,
// expired, replay or purpose-not-permitted (the reasons of the conformance
// vectors). A remote sender is told only Outward(err), which does not
// distinguish them (Section 8.4): fine-grained answers would let a prober
// enumerate the permitted purposes.
//
// Whether a bad signature was made by someone other than the issuer is not
// knowable from the object alone: Ed25519 verification only says that the
// signature does not match the issuer's key. When verification fails, the
// receiver therefore tries the keys it knows: the MLS sender of the message
// and Receiver.KnownSigners (the members of its groups, its contacts). If
// one of those verifies the signature, the reason is
// signature-not-by-issuer (an impersonation attempt by a known party, the
// case of vector 013); otherwise it is signature-invalid. This costs
// nothing on the accepting path.
package governed
