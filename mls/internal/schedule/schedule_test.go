package schedule

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/wire"
)

type hexBytes []byte

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	*h = v
	return err
}

func load(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("../../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

type keyScheduleVector struct {
	InitialInitSecret hexBytes `json:"initial_init_secret"`
	Epochs            []struct {
		CommitSecret       hexBytes `json:"commit_secret"`
		PSKSecret          hexBytes `json:"psk_secret"`
		GroupContext       hexBytes `json:"group_context"`
		JoinerSecret       hexBytes `json:"joiner_secret"`
		WelcomeSecret      hexBytes `json:"welcome_secret"`
		InitSecret         hexBytes `json:"init_secret"`
		SenderDataSecret   hexBytes `json:"sender_data_secret"`
		EncryptionSecret   hexBytes `json:"encryption_secret"`
		ExporterSecret     hexBytes `json:"exporter_secret"`
		EpochAuthenticator hexBytes `json:"epoch_authenticator"`
		ExternalSecret     hexBytes `json:"external_secret"`
		ConfirmationKey    hexBytes `json:"confirmation_key"`
		MembershipKey      hexBytes `json:"membership_key"`
		ResumptionPSK      hexBytes `json:"resumption_psk"`
		ExternalPub        hexBytes `json:"external_pub"`
		Exporter           struct {
			Label   string
			Context hexBytes
			Length  int
			Secret  hexBytes
		}
	}
}

// TestKeyScheduleVector walks the epochs of key-schedule.cs1.json using the
// vector's encoded GroupContexts (mls/vectors checks their encoding too).
func TestKeyScheduleVector(t *testing.T) {
	var vs []keyScheduleVector
	load(t, "key-schedule.cs1.json", &vs)
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

type pskVector struct {
	PSKs []struct {
		PSKID    hexBytes `json:"psk_id"`
		PSK      hexBytes `json:"psk"`
		PSKNonce hexBytes `json:"psk_nonce"`
	} `json:"psks"`
	PSKSecret hexBytes `json:"psk_secret"`
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
	var vs []pskVector
	load(t, "psk_secret.cs1.json", &vs)
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
