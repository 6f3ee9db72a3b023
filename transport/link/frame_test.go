package link

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLastResortMembersCompatible: the last-resort members round-trip, and
// a peer of the same version that predates them (a frame type without
// them) decodes the frames, ignoring them.
func TestLastResortMembersCompatible(t *testing.T) {
	kp := []byte{0, 1, 0, 5, 9}
	frames := []*frame{
		{T: tState, ID: 1, State: &State{Mode: "sleep", KeyPackages: [][]byte{{0, 1, 0, 5, 1}}, LastResort: kp}},
		{T: tStateOK, ID: 1, Held: &Held{Digests: [][]byte{}, LastResort: KeyPackageDigest(kp)}},
	}
	for _, f := range frames {
		b, err := encodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeFrame(b)
		if err != nil {
			t.Fatalf("decodeFrame(%s) = %v", f.T, err)
		}
		if diff := cmp.Diff(f, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", f.T, diff)
		}
		var old struct {
			V     int    `cbor:"v"`
			T     string `cbor:"t"`
			State *struct {
				Mode        string   `cbor:"mode"`
				KeyPackages [][]byte `cbor:"keyPackages,omitempty"`
			} `cbor:"state,omitempty"`
			Held *struct {
				Digests [][]byte `cbor:"digests"`
			} `cbor:"held,omitempty"`
		}
		if err := decMode.Unmarshal(b, &old); err != nil || old.V != Version {
			t.Errorf("a peer without the last-resort members: decoding %s = %v", f.T, err)
		}
	}
}
