package mls

import (
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// welcomeJoiner is one new member of a Welcome: its KeyPackage and, if the
// Commit had a path, the path secret of the lowest node shared by the
// committer's and its direct paths.
type welcomeJoiner struct {
	kp         *KeyPackage
	pathSecret []byte
}

// newWelcome builds a Welcome (RFC 9420, Section 12.4.3.1): gi, already
// signed, encrypted with the welcome key and nonce derived from
// joinerSecret and pskSecret, and for each joiner a GroupSecrets
// {joiner_secret, path_secret, psks} encrypted with EncryptWithLabel to its
// KeyPackage's init key, with the encrypted GroupInfo as context.
func newWelcome(gi *GroupInfo, joinerSecret, pskSecret []byte, psks []PreSharedKeyID, joiners []welcomeJoiner) (*Welcome, error) {
	key, nonce := schedule.WelcomeKeyNonce(schedule.WelcomeSecret(joinerSecret, pskSecret))
	encGI, err := suite.Seal(key, nonce, nil, gi.Marshal())
	if err != nil {
		return nil, err
	}
	w := &Welcome{CipherSuite: gi.GroupContext.CipherSuite, EncryptedGroupInfo: encGI}
	for _, j := range joiners {
		if j.kp.CipherSuite != w.CipherSuite {
			return nil, fmt.Errorf("%w: KeyPackage of suite %d", ErrUnsupportedCipherSuite, j.kp.CipherSuite)
		}
		secrets := &GroupSecrets{JoinerSecret: joinerSecret, PSKs: psks}
		if j.pathSecret != nil {
			secrets.PathSecret = &PathSecret{PathSecret: j.pathSecret}
		}
		kemOut, ct, err := suite.EncryptWithLabel(j.kp.InitKey, "Welcome", encGI, secrets.Marshal())
		if err != nil {
			return nil, err
		}
		w.Secrets = append(w.Secrets, EncryptedGroupSecrets{
			NewMember:             KeyPackageRef(j.kp),
			EncryptedGroupSecrets: HPKECiphertext{KEMOutput: kemOut, Ciphertext: ct},
		})
	}
	return w, nil
}
