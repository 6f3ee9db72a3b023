package governed_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/governed"
)

// FuzzParse checks parse → re-encode → compare: an object that parses
// re-encodes (MarshalJSON) to bytes that parse to the same object with the
// same signed bytes and re-encode to themselves, and a signature verifies
// on one exactly when it verifies on the other. Seeded with every Governed
// Object of the vectors.
func FuzzParse(f *testing.F) {
	for _, v := range loadVectors(f) {
		for _, s := range v.Sequence {
			f.Add([]byte(s.Object))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := governed.Parse(b)
		if err != nil {
			if governed.ReasonOf(err) != governed.ReasonMalformed {
				t.Fatalf("Parse error is not malformed: %v", err)
			}
			return
		}
		m, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o2, err := governed.Parse(m)
		if err != nil {
			t.Fatalf("re-encoded object does not parse: %v\n%s", err, m)
		}
		if !bytes.Equal(o.SignedBytes(), o2.SignedBytes()) {
			t.Fatalf("signed bytes changed:\n%s\n%s", o.SignedBytes(), o2.SignedBytes())
		}
		m2, _ := o2.MarshalJSON()
		if !bytes.Equal(m, m2) {
			t.Fatalf("re-encoding not stable:\n%s\n%s", m, m2)
		}
		if diff := cmp.Diff(o.Governance, o2.Governance); diff != "" || o.ID != o2.ID || o.Issuer != o2.Issuer || !o.IssuedAt.Equal(o2.IssuedAt) {
			t.Fatalf("fields changed: %s", diff)
		}
		if (o.VerifySignature() == nil) != (o2.VerifySignature() == nil) {
			t.Fatal("signature verdict changed on re-encoding")
		}
	})
}
