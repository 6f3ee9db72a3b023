//go:build integration

package tsmls

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
)

// A small, independent reader of the RFC 9420 structures the tests check
// byte by byte. It does not use mls/ on purpose: these tests state facts
// about ts-mls's bytes that our own codec is then held to.

// readVarint reads the RFC 9420 Section 2.1.2 variable-size length: the
// top two bits of the first byte give 1, 2 or 4 bytes; 0b11 is invalid, and
// so is a length not in its minimum encoding.
func readVarint(s *cryptobyte.String) (uint32, error) {
	var b uint8
	if !s.ReadUint8(&b) {
		return 0, errors.New("varint: short")
	}
	v := uint32(b & 0x3f)
	n := 1 << (b >> 6)
	if n == 8 {
		return 0, errors.New("varint: invalid prefix 0b11")
	}
	for range n - 1 {
		if !s.ReadUint8(&b) {
			return 0, errors.New("varint: short")
		}
		v = v<<8 | uint32(b)
	}
	if (n == 2 && v < 64) || (n == 4 && v < 16384) {
		return 0, errors.New("varint: not minimal")
	}
	return v, nil
}

func readVector(s *cryptobyte.String) ([]byte, error) {
	n, err := readVarint(s)
	if err != nil {
		return nil, err
	}
	var out []byte
	if !s.ReadBytes(&out, int(n)) {
		return nil, fmt.Errorf("vector of %d bytes: short", n)
	}
	return out, nil
}

func readUint16s(s *cryptobyte.String) ([]uint16, error) {
	v, err := readVector(s)
	if err != nil {
		return nil, err
	}
	in := cryptobyte.String(v)
	var out []uint16
	for !in.Empty() {
		var x uint16
		if !in.ReadUint16(&x) {
			return nil, errors.New("odd uint16 list")
		}
		out = append(out, x)
	}
	return out, nil
}

// mlsMessage splits an MLSMessage into version, wire format and body
// (RFC 9420 Section 6).
func mlsMessage(b []byte) (version, wireFormat uint16, body cryptobyte.String, err error) {
	s := cryptobyte.String(b)
	if !s.ReadUint16(&version) || !s.ReadUint16(&wireFormat) {
		return 0, 0, nil, errors.New("MLSMessage: short header")
	}
	return version, wireFormat, s, nil
}

// keyPackage is what the tests read out of a KeyPackage (Section 10).
type keyPackage struct {
	version, cipherSuite    uint16
	initKey, encryptionKey  []byte
	signatureKey            []byte
	credentialType          uint16
	identity                []byte
	capabilityCredentials   []uint16
	capabilityCipherSuites  []uint16
	leafNodeSource          uint8
	notBefore, notAfter     uint64
	leafExtensions, kpExts  []byte
	leafSignature, kpSigned []byte
}

func parseKeyPackage(body cryptobyte.String) (*keyPackage, error) {
	kp := &keyPackage{}
	s := &body
	var err error
	if !s.ReadUint16(&kp.version) || !s.ReadUint16(&kp.cipherSuite) {
		return nil, errors.New("KeyPackage: short")
	}
	steps := []func() error{
		func() (err error) { kp.initKey, err = readVector(s); return },
		func() (err error) { kp.encryptionKey, err = readVector(s); return },
		func() (err error) { kp.signatureKey, err = readVector(s); return },
		func() error {
			if !s.ReadUint16(&kp.credentialType) {
				return errors.New("credential type: short")
			}
			if kp.credentialType != 1 {
				return fmt.Errorf("credential type %d, want basic (1)", kp.credentialType)
			}
			kp.identity, err = readVector(s)
			return err
		},
		func() error { // Capabilities: versions, cipher_suites, extensions, proposals, credentials
			if _, err := readUint16s(s); err != nil {
				return err
			}
			if kp.capabilityCipherSuites, err = readUint16s(s); err != nil {
				return err
			}
			for range 2 {
				if _, err := readUint16s(s); err != nil {
					return err
				}
			}
			kp.capabilityCredentials, err = readUint16s(s)
			return err
		},
		func() error {
			if !s.ReadUint8(&kp.leafNodeSource) || !s.ReadUint64(&kp.notBefore) || !s.ReadUint64(&kp.notAfter) {
				return errors.New("leaf node source or lifetime: short")
			}
			return nil
		},
		func() (err error) { kp.leafExtensions, err = readVector(s); return },
		func() (err error) { kp.leafSignature, err = readVector(s); return },
		func() (err error) { kp.kpExts, err = readVector(s); return },
		func() (err error) { kp.kpSigned, err = readVector(s); return },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("KeyPackage: %w", err)
		}
	}
	if !s.Empty() {
		return nil, fmt.Errorf("KeyPackage: %d trailing bytes", len(*s))
	}
	return kp, nil
}

// privateMessage is the cleartext framing of a PrivateMessage (Section 6.3).
type privateMessage struct {
	groupID           []byte
	epoch             uint64
	contentType       uint8
	authenticatedData []byte
	senderData        []byte
	ciphertext        []byte
}

func parsePrivateMessage(body cryptobyte.String) (*privateMessage, error) {
	pm := &privateMessage{}
	s := &body
	var err error
	if pm.groupID, err = readVector(s); err != nil {
		return nil, err
	}
	if !s.ReadUint64(&pm.epoch) || !s.ReadUint8(&pm.contentType) {
		return nil, errors.New("PrivateMessage: short")
	}
	for _, dst := range []*[]byte{&pm.authenticatedData, &pm.senderData, &pm.ciphertext} {
		if *dst, err = readVector(s); err != nil {
			return nil, fmt.Errorf("PrivateMessage: %w", err)
		}
	}
	if !s.Empty() {
		return nil, fmt.Errorf("PrivateMessage: %d trailing bytes", len(*s))
	}
	return pm, nil
}

// varintLen is the size of the Section 2.1.2 length prefix for n.
func varintLen(n int) int {
	switch {
	case n < 64:
		return 1
	case n < 16384:
		return 2
	default:
		return 4
	}
}
