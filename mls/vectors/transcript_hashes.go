package vectors

import (
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// transcript-hashes: the confirmed and interim transcript hashes and the
// confirmation tag of a Commit (RFC 9420 Section 8.2).
func init() {
	register(&kind{name: "transcript-hashes", requires: []string{"authenticated_content"}, run: decoded(runTranscriptHashes)})
}

func runTranscriptHashes(v *vectorfmt.TranscriptHashes) error {
	ac, err := mls.ParseAuthenticatedContent(v.AuthenticatedContent)
	if err != nil {
		return err
	}
	var ck checker
	ck.bytes("AuthenticatedContent re-encoding", ac.Marshal(), v.AuthenticatedContent)
	if ac.Content.ContentType != mls.ContentTypeCommit {
		ck.errorf("authenticated_content carries content type %d, want a commit", ac.Content.ContentType)
		return ck.err()
	}
	confirmed := schedule.ConfirmedTranscriptHash(v.InterimTranscriptHashBefore, ac.ConfirmedTranscriptHashInput())
	ck.bytes("confirmed_transcript_hash_after", confirmed, v.ConfirmedTranscriptHashAfter)
	if !schedule.VerifyConfirmationTag(v.ConfirmationKey, v.ConfirmedTranscriptHashAfter, ac.Auth.ConfirmationTag) {
		ck.errorf("confirmation_tag does not verify")
	}
	ck.bytes("interim_transcript_hash_after", schedule.InterimTranscriptHash(confirmed, ac.Auth.ConfirmationTag), v.InterimTranscriptHashAfter)
	return ck.err()
}
