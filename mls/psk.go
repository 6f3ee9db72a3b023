package mls

import (
	"bytes"

	"golang.org/x/crypto/cryptobyte"
)

// PSKType is the type of a pre-shared key (RFC 9420, Section 8.4).
type PSKType uint8

// PSK types (RFC 9420, Section 8.4).
const (
	PSKTypeExternal   PSKType = 1
	PSKTypeResumption PSKType = 2
)

// ResumptionPSKUsage says what a resumption PSK is for (RFC 9420, Section
// 8.4).
type ResumptionPSKUsage uint8

// Resumption PSK usages (RFC 9420, Section 8.4).
const (
	ResumptionPSKUsageApplication ResumptionPSKUsage = 1
	ResumptionPSKUsageReInit      ResumptionPSKUsage = 2
	ResumptionPSKUsageBranch      ResumptionPSKUsage = 3
)

// PreSharedKeyID names a PSK and carries its nonce (RFC 9420, Section 8.4).
// PSKID is set for external PSKs; Usage, PSKGroupID and PSKEpoch for
// resumption PSKs.
type PreSharedKeyID struct {
	Type       PSKType
	PSKID      []byte
	Usage      ResumptionPSKUsage
	PSKGroupID []byte
	PSKEpoch   uint64
	Nonce      []byte
}

func (p *PreSharedKeyID) marshal(b *cryptobyte.Builder) {
	b.AddUint8(uint8(p.Type))
	switch p.Type {
	case PSKTypeExternal:
		addOpaque(b, p.PSKID)
	case PSKTypeResumption:
		b.AddUint8(uint8(p.Usage))
		addOpaque(b, p.PSKGroupID)
		b.AddUint64(p.PSKEpoch)
	}
	addOpaque(b, p.Nonce)
}

func (p *PreSharedKeyID) unmarshal(d *decoder) bool {
	*p = PreSharedKeyID{}
	if !d.u8("psktype", (*uint8)(&p.Type)) {
		return false
	}
	switch p.Type {
	case PSKTypeExternal:
		if !d.opaque("psk_id", &p.PSKID) {
			return false
		}
	case PSKTypeResumption:
		if !d.u8("usage", (*uint8)(&p.Usage)) || !d.opaque("psk_group_id", &p.PSKGroupID) ||
			!d.u64("psk_epoch", &p.PSKEpoch) {
			return false
		}
	default:
		return d.reject("psktype", "unknown value %d", p.Type)
	}
	return d.opaque("psk_nonce", &p.Nonce)
}

// Marshal returns the encoding of the PreSharedKeyID (the input B's
// key-schedule code hashes into PSKLabel; RFC 9420, Section 8.4).
func (p *PreSharedKeyID) Marshal() []byte { return encode(p) }

// sameKey reports whether p and o name the same PSK and nonce (the
// duplicate test of RFC 9420, Section 12.2).
func (p *PreSharedKeyID) sameKey(o *PreSharedKeyID) bool {
	return bytes.Equal(encode(p), encode(o))
}

// addPSKIDs writes PreSharedKeyID psks<V>.
func addPSKIDs(b *cryptobyte.Builder, ids []PreSharedKeyID) {
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range ids {
			ids[i].marshal(b)
		}
	})
}

// readPSKIDs reads PreSharedKeyID psks<V>.
func readPSKIDs(d *decoder, out *[]PreSharedKeyID) bool {
	var ids []PreSharedKeyID
	ok := d.vector("psks", func(d *decoder) bool {
		var id PreSharedKeyID
		if !id.unmarshal(d) {
			return false
		}
		ids = append(ids, id)
		return true
	})
	*out = ids
	return ok
}
