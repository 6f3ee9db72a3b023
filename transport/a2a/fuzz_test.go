package a2a

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/did"
)

// FuzzReadPart checks parse → re-encode → compare for the three part
// kinds: a part that reads as a kind is written again by that kind's writer,
// marshalled, unmarshalled and read to the same value, in both versions'
// shapes. It is seeded with the encapsulation-part vectors.
func FuzzReadPart(f *testing.F) {
	for _, v := range loadPartVectors(f) {
		f.Add([]byte(v.Part))
	}
	if b, err := os.ReadFile(vectorDir + "/extension-examples/data-object-v1/examples/mls-only-message-no-go-extension.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"data":{"mediaType":"` + MediaTypeMLSHandshake + `","initiatorDid":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG","commit":"AA","memberDids":[]}}`))
	opt := cmp.Comparer(func(a, b did.DID) bool { return a == b })
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Part
		if json.Unmarshal(b, &p) != nil {
			return
		}
		MediaTypeOf(p) // must not panic on anything
		for _, v := range []string{Version10, Version03} {
			if w, err := ReadMLSWire(p); err == nil {
				wp, err := w.Part()
				if err != nil {
					t.Fatalf("writing read MLS wire part: %v", err)
				}
				got, err := ReadMLSWire(reencode(t, []Part{wp.ForVersion(v)})[0])
				if err != nil || !cmp.Equal(w, got, opt) {
					t.Fatalf("MLS wire round trip: %+v, %v; want %+v", got, err, w)
				}
			}
			if h, err := ReadHandshake(p); err == nil {
				hp, err := h.Part()
				if err != nil {
					t.Fatalf("writing read handshake part: %v", err)
				}
				got, err := ReadHandshake(reencode(t, []Part{hp.ForVersion(v)})[0])
				if err != nil || !cmp.Equal(h, got, opt) {
					t.Fatalf("handshake round trip: %+v, %v; want %+v", got, err, h)
				}
			}
			if d, err := ReadDataObject(p); err == nil {
				dp, err := d.Part()
				if err != nil {
					t.Fatalf("writing read data object part: %v", err)
				}
				got, err := ReadDataObject(reencode(t, []Part{dp.ForVersion(v)})[0])
				if err != nil {
					t.Fatalf("data object round trip: %v", err)
				}
				var a, b any
				if json.Unmarshal(d.Object, &a) != nil || json.Unmarshal(got.Object, &b) != nil || !cmp.Equal(a, b) {
					t.Fatalf("data object round trip: %s, want %s", got.Object, d.Object)
				}
			}
		}
	})
}
