package did

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// bigBase58 is base58btc by math/big, the package's former encoder: the
// reference the quadratic one is checked against.
func bigBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n, mod, out := new(big.Int).SetBytes(b), new(big.Int), []byte{}
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append([]byte{alphabet[mod.Int64()]}, out...)
	}
	return string(bytes.Repeat([]byte{alphabet[0]}, zeros)) + string(out)
}

// TestBase58AgainstBig encodes and decodes random byte strings, with and
// without leading zero bytes, and compares with math/big.
func TestBase58AgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]byte{{}, {0}, {0, 0}, {0, 0, 1}, {255}, {0, 255, 255}, {1, 0, 0}}
	for range 2000 {
		b := make([]byte, rng.IntN(60))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		for i := range rng.IntN(4) {
			if i < len(b) {
				b[i] = 0
			}
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		want := bigBase58(b)
		if got := encodeBase58(b); got != want {
			t.Fatalf("encodeBase58(%x) = %q, want %q", b, got, want)
		}
		if len(want) == 0 {
			continue
		}
		back, err := decodeBase58(want)
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("decodeBase58(%q) = %x, %v; want %x", want, back, err, b)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	s := "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, err := Parse(s); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}
