package mls

import (
	"fmt"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// The codec follows crypto/tls: every wire struct has a marshal method that
// appends its TLS presentation-language encoding (RFC 9420, Section 2.1) to
// a cryptobyte.Builder, and an unmarshal method that consumes exactly one
// value through a decoder (decode.go) and reports success; the decoder
// remembers which field failed, and where, for the *ParseError. Decoding is strict:
// variable-size length headers must be minimal and must not use the 0b11
// prefix (Section 2.1.2, enforced by mls/internal/wire), optional<T> presence
// octets must be 0 or 1, enums with a select must hold a known value, and a
// top-level decode rejects trailing bytes.
//
// Values whose body the RFC defines per type but whose type is unknown to us
// (a Credential or Proposal of an unregistered or GREASE type) have no length
// of their own on the wire; like mls-rs and OpenMLS we carry such bodies as
// opaque<V>, which round-trips every value an implementation of those
// libraries produces.

type marshaler interface {
	marshal(b *cryptobyte.Builder)
}

type unmarshaler interface {
	unmarshal(d *decoder) bool
}

// encode returns the encoding of v. Lengths beyond the 2^30-1 bytes the
// variable-size header can express panic in mls/internal/wire; nothing this
// package builds comes near that.
func encode(v marshaler) []byte {
	var b cryptobyte.Builder
	v.marshal(&b)
	return b.BytesOrPanic()
}

// decodeAll decodes data as exactly one value of the named structure. It
// returns a *ParseError that names the field that failed and its offset.
func decodeAll(data []byte, v unmarshaler, name string) error {
	d := newDecoder(data)
	if !v.unmarshal(&d) {
		return d.err(name)
	}
	if !d.s.Empty() {
		return &ParseError{Struct: name, Offset: d.offset(), Err: fmt.Errorf("%d trailing bytes", len(d.s))}
	}
	return nil
}

// addVector writes a vector T v<V> whose elements f writes.
func addVector(b *cryptobyte.Builder, f cryptobyte.BuilderContinuation) {
	wire.AddVarVector(b, f)
}

// addOpaque writes opaque v<V>.
func addOpaque(b *cryptobyte.Builder, v []byte) { wire.AddVarBytes(b, v) }

// addOptional writes optional<T>.
func addOptional(b *cryptobyte.Builder, present bool, f cryptobyte.BuilderContinuation) {
	wire.AddOptional(b, present, f)
}

// addUint16s writes a vector of 16-bit values (uint16 v<V>).
func addUint16s[T ~uint16](b *cryptobyte.Builder, vs []T) {
	addVector(b, func(b *cryptobyte.Builder) {
		for _, v := range vs {
			b.AddUint16(uint16(v))
		}
	})
}

// readUint16s reads uint16 field<V>.
func readUint16s[T ~uint16](d *decoder, field string, out *[]T) bool {
	var vs []T
	ok := d.vector(field, func(d *decoder) bool {
		var v uint16
		if !d.u16("", &v) {
			return false
		}
		vs = append(vs, T(v))
		return true
	})
	*out = vs
	return ok
}

// addUint32s writes uint32 v<V>.
func addUint32s(b *cryptobyte.Builder, vs []uint32) {
	addVector(b, func(b *cryptobyte.Builder) {
		for _, v := range vs {
			b.AddUint32(v)
		}
	})
}

// readUint32s reads uint32 field<V>.
func readUint32s(d *decoder, field string, out *[]uint32) bool {
	var vs []uint32
	ok := d.vector(field, func(d *decoder) bool {
		var v uint32
		if !d.u32("", &v) {
			return false
		}
		vs = append(vs, v)
		return true
	})
	*out = vs
	return ok
}

// readVersion reads a ProtocolVersion.
func readVersion(d *decoder, field string, v *ProtocolVersion) bool {
	return d.u16(field, (*uint16)(v))
}

// readCipherSuite reads a CipherSuite.
func readCipherSuite(d *decoder, field string, cs *CipherSuite) bool {
	return d.u16(field, (*uint16)(cs))
}
