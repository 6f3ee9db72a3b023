package mls

import (
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// PSKLookup returns the secret of the pre-shared key id names, or an error
// wrapping ErrMissingPSK if the client does not have it (RFC 9420, Section
// 8.4). For a resumption PSK it returns the resumption_psk of the named
// group and epoch.
type PSKLookup func(id *PreSharedKeyID) ([]byte, error)

// ExternalPSKs returns a PSKLookup over external PSKs keyed by psk_id (RFC
// 9420, Section 8.4).
func ExternalPSKs(psks map[string][]byte) PSKLookup {
	return func(id *PreSharedKeyID) ([]byte, error) {
		if id.Type == PSKTypeExternal {
			if s, ok := psks[string(id.PSKID)]; ok {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%w: %s", ErrMissingPSK, describePSK(id))
	}
}

func describePSK(id *PreSharedKeyID) string {
	if id.Type == PSKTypeExternal {
		return fmt.Sprintf("external psk_id %x", id.PSKID)
	}
	return fmt.Sprintf("resumption psk of group %x epoch %d", id.PSKGroupID, id.PSKEpoch)
}

// checkPSKIDs applies the rules of RFC 9420, Sections 8.4 and 12.4.3.1 to a
// list of PSKs in a Welcome or a Commit: nonces of KDF.Nh bytes, and at most
// one resumption PSK with usage reinit or branch.
func checkPSKIDs(ids []PreSharedKeyID) error {
	special := 0
	for i := range ids {
		id := &ids[i]
		if len(id.Nonce) != suite.HashSize {
			return fmt.Errorf("%w: psk_nonce of %d bytes, want %d", ErrInvalidProposal, len(id.Nonce), suite.HashSize)
		}
		if id.Type == PSKTypeResumption && (id.Usage == ResumptionPSKUsageReInit || id.Usage == ResumptionPSKUsageBranch) {
			special++
		}
	}
	if special > 1 {
		return fmt.Errorf("%w: more than one reinit or branch resumption PSK", ErrInvalidProposal)
	}
	return nil
}

// pskSecret resolves ids with lookup and combines them into psk_secret (RFC
// 9420, Section 8.4), in the order given. No PSKs give the all-zero string.
func pskSecret(ids []PreSharedKeyID, lookup PSKLookup) ([]byte, error) {
	psks := make([]schedule.PSK, 0, len(ids))
	for i := range ids {
		if lookup == nil {
			return nil, fmt.Errorf("%w: %s", ErrMissingPSK, describePSK(&ids[i]))
		}
		secret, err := lookup(&ids[i])
		if err != nil {
			return nil, err
		}
		psks = append(psks, schedule.PSK{ID: ids[i].Marshal(), Secret: secret})
	}
	return schedule.PSKSecret(psks)
}
