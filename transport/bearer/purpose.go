package bearer

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
)

// Purposes of the relay's fleet console (transport/relay/console).
const (
	// PurposeFleetLogin is the purpose of a console login token: the relay
	// accepts it once, at /fleet/login, and answers with a session cookie.
	PurposeFleetLogin = "torpor-fleet-login"
	// PurposeFleet is the purpose of a token that reads the console's JSON
	// API (/fleet/api/...) as an operator, such as torporctl fleet's.
	PurposeFleet = "torpor-fleet"
)

// IssuePurpose returns Issue's token with the purpose claim purpose and a
// random jti of 16 bytes (base64url), as IssueLink makes link tokens. A
// Verifier accepts it only when its Purpose is purpose.
func IssuePurpose(key *did.PrivateKey, aud, purpose string, now time.Time, ttl time.Duration) (string, error) {
	if purpose == "" {
		return "", fmt.Errorf("bearer: empty purpose")
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("bearer: %v", err)
	}
	return issue(key, aud, purpose, base64.RawURLEncoding.EncodeToString(jti), now, ttl)
}
