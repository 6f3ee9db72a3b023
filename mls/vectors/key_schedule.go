package vectors

import (
	"fmt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// key-schedule: the epoch key schedule with the GroupContext encoding, the
// exporter and external_pub (RFC 9420 Sections 8, 8.1, 8.3 and 8.5).
func init() {
	register(&kind{name: "key-schedule", requires: []string{"initial_init_secret"}, run: decoded(runKeySchedule)})
}

func runKeySchedule(v *vectorfmt.KeySchedule) error {
	var ck checker
	init := []byte(v.InitialInitSecret)
	for i, ep := range v.Epochs {
		at := func(s string) string { return fmt.Sprintf("epoch %d %s", i, s) }
		gc := &mls.GroupContext{
			Version:                 mls.ProtocolMLS10,
			CipherSuite:             mls.CipherSuite(v.CipherSuite),
			GroupID:                 v.GroupID,
			Epoch:                   uint64(i),
			TreeHash:                ep.TreeHash,
			ConfirmedTranscriptHash: ep.ConfirmedTranscriptHash,
		}
		ctx := gc.Marshal()
		ck.bytes(at("group_context"), ctx, ep.GroupContext)
		joiner, e := schedule.Next(init, ep.CommitSecret, ep.PSKSecret, ctx)
		ck.bytes(at("joiner_secret"), joiner, ep.JoinerSecret)
		ck.bytes(at("welcome_secret"), schedule.WelcomeSecret(joiner, ep.PSKSecret), ep.WelcomeSecret)
		ck.bytes(at("init_secret"), e.InitSecret, ep.InitSecret)
		ck.bytes(at("sender_data_secret"), e.SenderDataSecret, ep.SenderDataSecret)
		ck.bytes(at("encryption_secret"), e.EncryptionSecret, ep.EncryptionSecret)
		ck.bytes(at("exporter_secret"), e.ExporterSecret, ep.ExporterSecret)
		ck.bytes(at("epoch_authenticator"), e.EpochAuthenticator, ep.EpochAuthenticator)
		ck.bytes(at("external_secret"), e.ExternalSecret, ep.ExternalSecret)
		ck.bytes(at("confirmation_key"), e.ConfirmationKey, ep.ConfirmationKey)
		ck.bytes(at("membership_key"), e.MembershipKey, ep.MembershipKey)
		ck.bytes(at("resumption_psk"), e.ResumptionPSK, ep.ResumptionPSK)
		_, pub, err := e.ExternalKeyPair()
		if !ck.fail(at("external key pair"), err) {
			ck.bytes(at("external_pub"), pub, ep.ExternalPub)
		}
		x := ep.Exporter
		out, err := e.Export(x.Label, x.Context, x.Length)
		if !ck.fail(at("exporter"), err) {
			ck.bytes(at("exporter.secret"), out, x.Secret)
		}
		init = e.InitSecret
	}
	return ck.err()
}
