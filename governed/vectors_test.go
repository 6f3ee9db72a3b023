package governed_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/governed/governedtest"
)

const vectorDir = "../testdata/vectors/atom"

type step struct {
	Expect string          `json:"expect"`
	Reason string          `json:"reason"`
	Object json.RawMessage `json:"object"`
}

type vector struct {
	ID                string   `json:"id"`
	Kind              string   `json:"kind"`
	Now               string   `json:"now"`
	PermittedPurposes []string `json:"permittedPurposes"`
	CanonicalForm     *string  `json:"canonicalForm"`
	step
	Sequence []step `json:"sequence"`
}

// identities are the vectors' test identities (manifest.json): the parties
// this receiver knows.
var identities = []did.DID{
	did.MustParse("did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"),
	did.MustParse("did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"),
}

func loadVectors(tb testing.TB) []vector {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []vector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(b, &v); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		if v.Kind == "data-object" {
			v.Sequence = []step{v.step}
		}
		if v.Kind == "data-object" || v.Kind == "data-object-sequence" {
			out = append(out, v)
		}
	}
	if len(out) < 18 {
		tb.Fatalf("found %d Governed Object vectors in %s, want 18", len(out), vectorDir)
	}
	return out
}

// TestVectors runs every data-object and data-object-sequence vector and
// compares both the verdict and the exact reason.
func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.ID, func(t *testing.T) {
			now, err := time.Parse(time.RFC3339Nano, v.Now)
			if err != nil {
				t.Fatal(err)
			}
			r := &governed.Receiver{Purposes: v.PermittedPurposes, KnownSigners: identities, Clock: clocktest.New(now)}
			cache := governedtest.NewReplay()
			for i, s := range v.Sequence {
				_, err := r.Accept(s.Object, governed.Input{Replay: cache})
				got := "accept"
				if err != nil {
					got = "reject"
				}
				if got != s.Expect {
					t.Fatalf("step %d: %s (%v), want %s", i, got, err, s.Expect)
				}
				if s.Reason != "" && governed.ReasonOf(err).String() != s.Reason {
					t.Errorf("step %d: reason %s (%v), want %s", i, governed.ReasonOf(err), err, s.Reason)
				}
			}
			if v.CanonicalForm != nil {
				o, err := governed.Parse(v.Sequence[0].Object)
				if err != nil {
					t.Fatal(err)
				}
				if got := string(o.SignedBytes()); got != *v.CanonicalForm {
					t.Errorf("SignedBytes =\n%s\nwant\n%s", got, *v.CanonicalForm)
				}
			}
		})
	}
}

// TestVector013WithoutKnownSigners shows what an object signed by a key the
// receiver does not know yields: signature-invalid, still a rejection.
func TestVector013WithoutKnownSigners(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(vectorDir, "013-issuer-key-mismatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	now, _ := time.Parse(time.RFC3339Nano, v.Now)
	r := &governed.Receiver{Purposes: v.PermittedPurposes, Clock: clocktest.New(now)}
	_, err = r.Accept(v.Object, governed.Input{Replay: governedtest.NewReplay()})
	if governed.ReasonOf(err) != governed.ReasonSignatureInvalid {
		t.Errorf("Accept(013) without known signers = %v, want signature-invalid", err)
	}
	// The MLS sender's key is tried too.
	_, err = r.Accept(v.Object, governed.Input{Sender: identities[1], Replay: governedtest.NewReplay()})
	if governed.ReasonOf(err) != governed.ReasonSignatureNotByIssuer {
		t.Errorf("Accept(013) from Bob's MLS leaf = %v, want signature-not-by-issuer", err)
	}
}
