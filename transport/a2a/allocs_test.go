//go:build !race

// The allocation counts below hold without the race detector only: under
// -race, sync.Pool drops what is put in it at random.

package a2a

import "testing"

// TestReadBodyAllocations counts what ReadBody allocates for a request
// with one Governed Object: at most 7 (the request, the lists of its parts,
// the data's members with their names). The JSON-RPC version, the method
// and the media types are the package's constants, not copies
// (knownString), and the part and the media type it reads stay off the
// heap (decodeString): with them it took 13.
func TestReadBodyAllocations(t *testing.T) {
	body := objectBody(t, 560)
	ReadBody(body) // the pools filled
	if n := testing.AllocsPerRun(100, func() { ReadBody(body) }); n > 7 {
		t.Errorf("ReadBody allocates %v times for a Governed Object, want at most 7", n)
	}
}
