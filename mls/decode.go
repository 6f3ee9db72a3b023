package mls

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// A decoder reads one top-level value and, when the input is malformed,
// remembers what failed and where: the path of RFC 9420 field names from the
// top-level structure down to the field being read, and the byte offset of
// that field in the whole input. The unmarshal methods read every field
// through it and name the field as the RFC does ("signature_key").
//
// Keeping the path costs a store of a string header per nested structure or
// vector and no allocation; the path is only joined, and the reason only
// formatted, when a read fails. The first failure is the one reported: the
// callers that see a read fail only return false.
type decoder struct {
	s cryptobyte.String // what is left of the innermost vector being read
	// origin is the capacity of the whole input. Vector bodies are
	// sub-slices of it, so the offset of s is origin - cap(s).
	origin int
	at     int // offset of the field read last, for reject
	path   [maxPath]pathElem
	depth  int // may exceed maxPath; the deeper elements are not kept
	fail   *ParseError
	// alias makes opaque return slices of the input instead of copies,
	// for an input the caller owns and no one changes (a decrypted
	// PrivateMessageContent).
	alias bool
}

// maxPath bounds the field path a decoder keeps. The deepest RFC 9420 value
// we decode (a Commit carrying an Add's KeyPackage with an X.509 credential)
// nests about 8 levels.
const maxPath = 12

type pathElem struct {
	name  string
	index int // element index within the vector name, or -1
}

func newDecoder(data []byte) decoder {
	return decoder{s: data, origin: cap(data)}
}

// offset returns the offset of the next byte to read in the whole input.
func (d *decoder) offset() int { return d.origin - cap(d.s) }

// err returns the *ParseError for a failed decode of the structure name.
func (d *decoder) err(name string) *ParseError {
	if d.fail == nil {
		return &ParseError{Struct: name, Offset: d.offset(), Err: errors.New("malformed input")}
	}
	e := *d.fail
	e.Struct = name
	return &e
}

// failAt records that field, starting at offset off, is malformed. Only the
// first failure is kept. It returns false, for the caller to return.
func (d *decoder) failAt(off int, field, format string, args ...any) bool {
	if d.fail == nil {
		d.fail = &ParseError{Field: d.pathTo(field), Offset: off, Err: fmt.Errorf(format, args...)}
	}
	return false
}

// reject records that field, the one read last, holds a value the structure
// does not allow (an unknown enum value, a wrong size, a duplicate).
func (d *decoder) reject(field, format string, args ...any) bool {
	return d.failAt(d.at, field, format, args...)
}

// pathTo joins the current path and field ("leaf_node.signature_key",
// "secrets[1].new_member").
func (d *decoder) pathTo(field string) string {
	var b strings.Builder
	for i := range min(d.depth, maxPath) {
		p := d.path[i]
		if p.name != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.name)
		}
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	if d.depth > maxPath {
		b.WriteString(".…")
	}
	if field != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(field)
	}
	return b.String()
}

func (d *decoder) push(name string) {
	if d.depth < maxPath {
		d.path[d.depth] = pathElem{name: name, index: -1}
	}
	d.depth++
}

func (d *decoder) pop() { d.depth-- }

func (d *decoder) setIndex(i int) {
	if d.depth <= maxPath {
		d.path[d.depth-1].index = i
	}
}

// sub reads the structure field with f.
func (d *decoder) sub(field string, f func(*decoder) bool) bool {
	d.push(field)
	ok := f(d)
	d.pop()
	return ok
}

func (d *decoder) short(field, what string, need int) bool {
	return d.failAt(d.at, field, "truncated %s, need %d bytes, have %d", what, need, len(d.s))
}

func (d *decoder) u8(field string, v *uint8) bool {
	d.at = d.offset()
	return d.s.ReadUint8(v) || d.short(field, "uint8", 1)
}

func (d *decoder) u16(field string, v *uint16) bool {
	d.at = d.offset()
	return d.s.ReadUint16(v) || d.short(field, "uint16", 2)
}

func (d *decoder) u32(field string, v *uint32) bool {
	d.at = d.offset()
	return d.s.ReadUint32(v) || d.short(field, "uint32", 4)
}

func (d *decoder) u64(field string, v *uint64) bool {
	d.at = d.offset()
	return d.s.ReadUint64(v) || d.short(field, "uint64", 8)
}

// fixed reads opaque field[len(dst)] into dst.
func (d *decoder) fixed(field string, dst []byte) bool {
	d.at = d.offset()
	return d.s.CopyBytes(dst) || d.short(field, "fixed-size value", len(dst))
}

// varBody reads the variable-size length header of field (RFC 9420,
// Section 2.1.2) and the body it announces, without copying.
func (d *decoder) varBody(field string, body *cryptobyte.String) bool {
	d.at = d.offset()
	start := d.s
	var n uint64
	if !wire.ReadVarint(&d.s, &n) {
		d.s = start
		return d.reject(field, "%v", wire.VarintError(start))
	}
	if uint64(len(d.s)) < n {
		return d.reject(field, "truncated vector, need %d bytes, have %d", n, len(d.s))
	}
	return d.s.ReadBytes((*[]byte)(body), int(n))
}

// opaque reads opaque field<V>, copying it unless d.alias is set.
func (d *decoder) opaque(field string, out *[]byte) bool {
	var body cryptobyte.String
	if !d.varBody(field, &body) {
		return false
	}
	if d.alias {
		*out = body[:len(body):len(body)] // an append must not write over the input
		return true
	}
	*out = append([]byte{}, body...)
	return true
}

// vector reads T field<V>, calling f for each element until the vector's
// body is consumed. f must consume at least one byte per element.
func (d *decoder) vector(field string, f func(*decoder) bool) bool {
	var body cryptobyte.String
	if !d.varBody(field, &body) {
		return false
	}
	rest := d.s
	d.s = body
	d.push(field)
	ok := true
	for i := 0; ok && !d.s.Empty(); i++ {
		d.setIndex(i)
		start, n := d.offset(), len(d.s)
		ok = f(d) && (len(d.s) < n || d.failAt(start, "", "element of no bytes"))
	}
	d.pop()
	d.s = rest
	return ok
}

// optional reads the presence octet of optional<T> field.
func (d *decoder) optional(field string, present *bool) bool {
	var p uint8
	if !d.u8(field, &p) {
		return false
	}
	if p > 1 {
		return d.reject(field, "presence octet %d, want 0 or 1", p)
	}
	*present = p == 1
	return true
}
