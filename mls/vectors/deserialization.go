package vectors

import (
	"bytes"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// deserialization: the variable-size length header of RFC 9420, Section
// 2.1.2.
func init() {
	register(&kind{name: "deserialization", requires: []string{"vlbytes_header"}, run: decoded(runDeserialization)})
}

func runDeserialization(v *vectorfmt.Deserialization) error {
	var ck checker
	s := cryptobyte.String(v.Header)
	var n uint64
	if !wire.ReadVarint(&s, &n) || !s.Empty() {
		ck.errorf("header %x does not decode as exactly one length", []byte(v.Header))
	} else if n != v.Length {
		ck.errorf("decoded length = %d, want %d", n, v.Length)
	}
	if v.Length <= wire.MaxVarint {
		if enc := wire.AppendVarint(nil, v.Length); !bytes.Equal(enc, v.Header) {
			ck.errorf("encoding of %d = %x, want %x", v.Length, enc, []byte(v.Header))
		}
	}
	return ck.err()
}
