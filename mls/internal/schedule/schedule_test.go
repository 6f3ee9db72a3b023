package schedule

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/wire"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

func load[T any](t testing.TB, name string) []T {
	t.Helper()
	vs, err := vectorfmt.Load[T]("../../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestKeyScheduleVector walks the epochs of key-schedule.cs1.json using the
// vector's encoded GroupContexts (mls/vectors checks their encoding too).
func TestKeyScheduleVector(t *testing.T) {
	vs := load[vectorfmt.KeySchedule](t, "key-schedule.cs1.json")
	for _, v := range vs {
		init := []byte(v.InitialInitSecret)
		for i, ep := range v.Epochs {
			joiner, e := Next(init, ep.CommitSecret, ep.PSKSecret, ep.GroupContext)
			got := [][]byte{joiner, WelcomeSecret(joiner, ep.PSKSecret), e.InitSecret, e.SenderDataSecret,
				e.EncryptionSecret, e.ExporterSecret, e.EpochAuthenticator, e.ExternalSecret,
				e.ConfirmationKey, e.MembershipKey, e.ResumptionPSK}
			want := [][]byte{ep.JoinerSecret, ep.WelcomeSecret, ep.InitSecret, ep.SenderDataSecret,
				ep.EncryptionSecret, ep.ExporterSecret, ep.EpochAuthenticator, ep.ExternalSecret,
				ep.ConfirmationKey, ep.MembershipKey, ep.ResumptionPSK}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("epoch %d (-want +got):\n%s", i, diff)
			}
			_, pub, err := e.ExternalKeyPair()
			if err != nil || !bytes.Equal(pub, ep.ExternalPub) {
				t.Errorf("epoch %d: external_pub = %x, %v; want %x", i, pub, err, ep.ExternalPub)
			}
			x := ep.Exporter
			out, err := e.Export(x.Label, x.Context, x.Length)
			if err != nil || !bytes.Equal(out, x.Secret) {
				t.Errorf("epoch %d: exporter = %x, %v; want %x", i, out, err, x.Secret)
			}
			init = e.InitSecret
		}
	}
}

// externalPSKID encodes PreSharedKeyID{external, psk_id, psk_nonce}.
func externalPSKID(t testing.TB, id, nonce []byte) []byte {
	b := []byte{1}
	b = wire.AppendVarint(b, uint64(len(id)))
	b = append(b, id...)
	b = wire.AppendVarint(b, uint64(len(nonce)))
	return append(b, nonce...)
}

func TestPSKSecretVector(t *testing.T) {
	vs := load[vectorfmt.PSKSecret](t, "psk_secret.cs1.json")
	for i, v := range vs {
		var psks []PSK
		for _, p := range v.PSKs {
			psks = append(psks, PSK{ID: externalPSKID(t, p.PSKID, p.PSKNonce), Secret: p.PSK})
		}
		got, err := PSKSecret(psks)
		if err != nil || !bytes.Equal(got, v.PSKSecret) {
			t.Errorf("case %d (%d PSKs): psk_secret = %x, %v; want %x", i, len(psks), got, err, v.PSKSecret)
		}
	}
}

func TestExternalInit(t *testing.T) {
	e := FromJoiner(bytes.Repeat([]byte{1}, 32), nil, []byte("ctx"))
	priv, pub, err := e.ExternalKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	kemOut, initSecret, err := ExternalInit(pub)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExternalInitSecret(priv, kemOut)
	if err != nil || !bytes.Equal(got, initSecret) || len(got) != suite.HashSize {
		t.Errorf("ExternalInitSecret = %x, %v; want %x", got, err, initSecret)
	}
	bad := append([]byte{}, kemOut...)
	bad[0] ^= 1
	if got, err := ExternalInitSecret(priv, bad); err == nil && bytes.Equal(got, initSecret) {
		t.Error("a tampered kem_output gave the same init secret")
	}
	if _, err := ExternalInitSecret(priv, kemOut[:4]); !errors.Is(err, suite.ErrDecrypt) {
		t.Errorf("short kem_output: %v, want ErrDecrypt", err)
	}
}

func TestTranscriptAndConfirmation(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	confirmed := ConfirmedTranscriptHash([]byte("interim"), []byte("input"))
	if want := suite.Hash([]byte("interiminput")); !bytes.Equal(confirmed, want) {
		t.Errorf("ConfirmedTranscriptHash = %x, want %x", confirmed, want)
	}
	tag := ConfirmationTag(key, confirmed)
	if !VerifyConfirmationTag(key, confirmed, tag) {
		t.Error("VerifyConfirmationTag rejects its own tag")
	}
	tag[0] ^= 1
	if VerifyConfirmationTag(key, confirmed, tag) {
		t.Error("VerifyConfirmationTag accepts a tampered tag")
	}
	interim := InterimTranscriptHash(confirmed, tag)
	if want := suite.Hash(append(append(append([]byte{}, confirmed...), 32), tag...)); !bytes.Equal(interim, want) {
		t.Errorf("InterimTranscriptHash = %x, want %x", interim, want)
	}
}

func TestExportLength(t *testing.T) {
	e := FromJoiner(make([]byte, 32), nil, nil)
	if _, err := e.Export("l", nil, MaxExportLength+1); !errors.Is(err, ErrExportLength) {
		t.Errorf("Export(too long) = %v, want ErrExportLength", err)
	}
	if out, err := e.Export("l", nil, MaxExportLength); err != nil || len(out) != MaxExportLength {
		t.Errorf("Export(max) = %d bytes, %v", len(out), err)
	}
}
