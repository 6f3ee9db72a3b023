package mls

import (
	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// The codec follows crypto/tls: every wire struct has a marshal method that
// appends its TLS presentation-language encoding (RFC 9420, Section 2.1) to
// a cryptobyte.Builder, and an unmarshal method that consumes exactly one
// value from a cryptobyte.String and reports success. Decoding is strict:
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
	unmarshal(s *cryptobyte.String) bool
}

// encode returns the encoding of v. Lengths beyond the 2^30-1 bytes the
// variable-size header can express panic in mls/internal/wire; nothing this
// package builds comes near that.
func encode(v marshaler) []byte {
	var b cryptobyte.Builder
	v.marshal(&b)
	return b.BytesOrPanic()
}

// decodeAll decodes data as exactly one value of the named structure.
func decodeAll(data []byte, v unmarshaler, name string) error {
	s := cryptobyte.String(data)
	if !v.unmarshal(&s) {
		return errorf(name, "malformed or truncated input")
	}
	if !s.Empty() {
		return errorf(name, "%d trailing bytes", len(s))
	}
	return nil
}

// addVector writes a vector T v<V> whose elements f writes.
func addVector(b *cryptobyte.Builder, f cryptobyte.BuilderContinuation) {
	wire.AddVarVector(b, f)
}

// readVector reads a vector T v<V>, calling f for each element until the
// vector's body is consumed. f must consume at least one byte per element.
func readVector(s *cryptobyte.String, f func(*cryptobyte.String) bool) bool {
	var body cryptobyte.String
	if !wire.ReadVarVector(s, &body) {
		return false
	}
	for !body.Empty() {
		n := len(body)
		if !f(&body) || len(body) == n {
			return false
		}
	}
	return true
}

// addOpaque writes opaque v<V>.
func addOpaque(b *cryptobyte.Builder, v []byte) { wire.AddVarBytes(b, v) }

// readOpaque reads opaque v<V>, copying it.
func readOpaque(s *cryptobyte.String, out *[]byte) bool { return wire.ReadVarBytes(s, out) }

// addOptional writes optional<T>.
func addOptional(b *cryptobyte.Builder, present bool, f cryptobyte.BuilderContinuation) {
	wire.AddOptional(b, present, f)
}

// readOptional reads the presence octet of optional<T>.
func readOptional(s *cryptobyte.String, present *bool) bool { return wire.ReadOptional(s, present) }

// addUint16s writes a vector of 16-bit values (uint16 v<V>).
func addUint16s[T ~uint16](b *cryptobyte.Builder, vs []T) {
	addVector(b, func(b *cryptobyte.Builder) {
		for _, v := range vs {
			b.AddUint16(uint16(v))
		}
	})
}

// readUint16s reads uint16 v<V>.
func readUint16s[T ~uint16](s *cryptobyte.String, out *[]T) bool {
	var vs []T
	ok := readVector(s, func(s *cryptobyte.String) bool {
		var v uint16
		if !s.ReadUint16(&v) {
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

// readUint32s reads uint32 v<V>.
func readUint32s(s *cryptobyte.String, out *[]uint32) bool {
	var vs []uint32
	ok := readVector(s, func(s *cryptobyte.String) bool {
		var v uint32
		if !s.ReadUint32(&v) {
			return false
		}
		vs = append(vs, v)
		return true
	})
	*out = vs
	return ok
}

// readVersion reads a ProtocolVersion.
func readVersion(s *cryptobyte.String, v *ProtocolVersion) bool {
	return s.ReadUint16((*uint16)(v))
}

// readCipherSuite reads a CipherSuite.
func readCipherSuite(s *cryptobyte.String, cs *CipherSuite) bool {
	return s.ReadUint16((*uint16)(cs))
}
