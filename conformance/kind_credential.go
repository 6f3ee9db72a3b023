package conformance

import (
	"encoding/base64"

	"github.com/torpor-dev/torpor/did"
)

func init() { Register("credential-binding", runCredentialBinding) }

// runCredentialBinding checks draft-chapman-a2a-mls-03 Section 4.3: the
// credential identity must parse as an Ed25519 did:key whose key equals
// the LeafNode signature_key octet for octet (did.DID.MatchesKey, which the
// MLS code calls on every KeyPackage and LeafNode).
func runCredentialBinding(v *Vector) Result {
	var in struct {
		Expect             string `json:"expect"`
		Reason             string `json:"reason"`
		CredentialIdentity string `json:"credentialIdentity"`
		LeafSignatureKey   string `json:"leafSignatureKey"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	key, err := base64.StdEncoding.DecodeString(in.LeafSignatureKey)
	if err != nil {
		return Broken(err)
	}
	got := "accept"
	id, err := did.Parse(in.CredentialIdentity)
	switch {
	case err != nil:
		got = verdict("reject", "malformed")
	case !id.MatchesKey(key):
		got = verdict("reject", "credential-key-mismatch")
	}
	return compareVerdicts([]string{verdict(in.Expect, in.Reason)}, []string{got})
}
