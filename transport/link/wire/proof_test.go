package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestProofMessage: the signed bytes are the context string and the RFC
// 8785 form of the claims, exactly; a challenge with a nonce of another
// length is refused.
func TestProofMessage(t *testing.T) {
	nonce := make([]byte, NonceSize)
	for i := range nonce {
		nonce[i] = byte(i)
	}
	c := Challenge{Nonce: nonce, Origin: "https://relay.example", Time: 1768478400}
	got, err := ProofMessage(c, "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", "atom.e30.AA")
	if err != nil {
		t.Fatal(err)
	}
	// token: base64url(SHA-256("atom.e30.AA")), computed with sha256sum and basenc --base64url.
	want := "torpor-link/v2 proof of possession\x00" +
		`{"did":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG","nonce":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",` +
		`"origin":"https://relay.example","time":1768478400,"token":"` + tokenHash + `"}`
	if string(got) != want {
		t.Errorf("ProofMessage =\n%q\nwant\n%q", got, want)
	}
	if strings.HasPrefix(string(got), "{") {
		t.Error("a proof message starts like canonical JSON: no domain separation from tokens and Governed Objects")
	}
	for _, n := range []int{0, NonceSize - 1, NonceSize + 1} {
		if _, err := ProofMessage(Challenge{Nonce: make([]byte, n), Origin: c.Origin}, "did:key:z", "t"); !errors.Is(err, ErrProtocol) {
			t.Errorf("nonce of %d bytes: ProofMessage = %v, want ErrProtocol", n, err)
		}
	}
}

const tokenHash = "XW9ov06jYfVVw-2gLYg8Ywa72asW9CvdlOO2hl3R3NE"
