// Package wire holds the pieces of the TLS presentation language that RFC
// 9420 adds to golang.org/x/crypto/cryptobyte: the variable-size length
// header of Section 2.1.2 (a QUIC-style varint), vectors prefixed by it, and
// optional<T> values.
//
// Decoding is strict: a length header that is not minimal, that uses the
// reserved 0b11 prefix, or that runs past the input is rejected, and callers
// end every unmarshal with s.Empty() so trailing bytes are rejected too.
package wire

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
)

// MaxVarint is the largest length the variable-size header can carry
// (2^30 - 1), RFC 9420 Section 2.1.2.
const MaxVarint = 1<<30 - 1

// AppendVarint appends the minimal variable-size encoding of n, which must
// not exceed MaxVarint (it panics otherwise: lengths come from our own
// buffers, and a value that large is a programming error).
func AppendVarint(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n < 1<<30:
		return append(b, 0x80|byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	default:
		panic("wire: length exceeds the variable-size header's range")
	}
}

// ReadVarint reads a variable-size length header. It fails on the 0b11
// prefix, on truncated input and on a non-minimal encoding.
func ReadVarint(s *cryptobyte.String, out *uint64) bool {
	var first uint8
	if !s.ReadUint8(&first) {
		return false
	}
	n := uint64(first & 0x3f)
	switch first >> 6 {
	case 0:
	case 1:
		var b uint8
		if !s.ReadUint8(&b) {
			return false
		}
		n = n<<8 | uint64(b)
		if n < 1<<6 {
			return false
		}
	case 2:
		var b [3]byte
		if !s.CopyBytes(b[:]) {
			return false
		}
		n = n<<24 | uint64(b[0])<<16 | uint64(b[1])<<8 | uint64(b[2])
		if n < 1<<14 {
			return false
		}
	default:
		return false
	}
	*out = n
	return true
}

// AddVarint writes n as a variable-size header.
func AddVarint(b *cryptobyte.Builder, n uint64) {
	b.AddBytes(AppendVarint(nil, n))
}

// AddVarBytes writes v as opaque v<V>.
func AddVarBytes(b *cryptobyte.Builder, v []byte) {
	AddVarint(b, uint64(len(v)))
	b.AddBytes(v)
}

// AddVarVector writes the output of f prefixed by its variable-size length:
// a vector T v<V> whose elements f writes.
func AddVarVector(b *cryptobyte.Builder, f cryptobyte.BuilderContinuation) {
	var child cryptobyte.Builder
	f(&child)
	body, err := child.Bytes()
	if err != nil {
		b.SetError(err)
		return
	}
	AddVarBytes(b, body)
}

// ReadVarBytes reads opaque v<V> into out, copying it.
func ReadVarBytes(s *cryptobyte.String, out *[]byte) bool {
	var v cryptobyte.String
	if !ReadVarVector(s, &v) {
		return false
	}
	*out = append([]byte{}, v...)
	return true
}

// ReadVarVector reads the body of a vector prefixed by a variable-size
// length into out, without copying.
func ReadVarVector(s *cryptobyte.String, out *cryptobyte.String) bool {
	var n uint64
	if !ReadVarint(s, &n) {
		return false
	}
	if uint64(len(*s)) < n {
		return false
	}
	return s.ReadBytes((*[]byte)(out), int(n))
}

// AddOptional writes optional<T>: a presence octet, then T when present.
func AddOptional(b *cryptobyte.Builder, present bool, f cryptobyte.BuilderContinuation) {
	if !present {
		b.AddUint8(0)
		return
	}
	b.AddUint8(1)
	f(b)
}

// ReadOptional reads the presence octet of optional<T>. It fails for any
// value other than 0 or 1.
func ReadOptional(s *cryptobyte.String, present *bool) bool {
	var p uint8
	if !s.ReadUint8(&p) || p > 1 {
		return false
	}
	*present = p == 1
	return true
}

// Marshal runs f on a fresh builder and returns the bytes.
func Marshal(f cryptobyte.BuilderContinuation) ([]byte, error) {
	var b cryptobyte.Builder
	f(&b)
	return b.Bytes()
}

// VarintError says why ReadVarint rejects a header at the start of b, or
// returns nil if it does not. It is meant for error messages, after
// ReadVarint failed.
func VarintError(b []byte) error {
	if len(b) == 0 {
		return errors.New("truncated length header, need 1 byte, have 0")
	}
	size := 1 << (b[0] >> 6)
	switch {
	case size == 8:
		return fmt.Errorf("length header %#02x uses the reserved prefix 0b11", b[0])
	case len(b) < size:
		return fmt.Errorf("truncated length header, need %d bytes, have %d", size, len(b))
	}
	s := cryptobyte.String(b)
	var n uint64
	if !ReadVarint(&s, &n) {
		return fmt.Errorf("length header % x is not minimal", b[:size])
	}
	return nil
}
