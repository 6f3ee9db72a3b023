package vectors

import (
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// psk_secret: combining external PSKs into psk_secret (RFC 9420 Section
// 8.4), with the PreSharedKeyID encoding.
func init() {
	register(&kind{name: "psk_secret", requires: []string{"psks", "psk_secret"}, run: decoded(runPSKSecret)})
}

func runPSKSecret(v *vectorfmt.PSKSecret) error {
	var psks []schedule.PSK
	for _, p := range v.PSKs {
		id := &mls.PreSharedKeyID{Type: mls.PSKTypeExternal, PSKID: p.PSKID, Nonce: p.PSKNonce}
		psks = append(psks, schedule.PSK{ID: id.Marshal(), Secret: p.PSK})
	}
	var ck checker
	got, err := schedule.PSKSecret(psks)
	if !ck.fail("PSKSecret", err) {
		ck.bytes("psk_secret", got, v.PSKSecret)
	}
	return ck.err()
}
