package wsclient

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Opcode is a frame's opcode (Section 5.2, 11.8).
type Opcode byte

// The opcodes of Section 5.2.
const (
	OpContinuation Opcode = 0x0
	OpText         Opcode = 0x1
	OpBinary       Opcode = 0x2
	OpClose        Opcode = 0x8
	OpPing         Opcode = 0x9
	OpPong         Opcode = 0xA
)

func (op Opcode) control() bool { return op&0x8 != 0 }

// StatusCode is a close frame's status code (Section 7.4).
type StatusCode uint16

// The status codes of Section 7.4.1 the link uses.
const (
	StatusNormalClosure   StatusCode = 1000
	StatusGoingAway       StatusCode = 1001
	StatusProtocolError   StatusCode = 1002
	StatusUnsupportedData StatusCode = 1003
	StatusNoStatusRcvd    StatusCode = 1005 // never sent (Section 7.4.1)
	StatusPolicyViolation StatusCode = 1008
	StatusMessageTooBig   StatusCode = 1009
	StatusInternalError   StatusCode = 1011
)

// maxControl bounds a control frame's payload (Section 5.5).
const maxControl = 125

// ErrProtocol wraps every violation of RFC 6455 by the server.
var ErrProtocol = errors.New("websocket: protocol error")

// header is a frame's header (Section 5.2).
type header struct {
	fin    bool
	op     Opcode
	masked bool
	length int64
}

// readHeader reads and checks a frame header from a server: no reserved
// bit (no extension was negotiated), a known opcode, no mask (Section 5.1:
// a server must not mask), a 64-bit length with its top bit clear, and a
// control frame whole and at most 125 bytes (Section 5.5).
func readHeader(br *bufio.Reader) (header, error) {
	var b [8]byte
	if _, err := io.ReadFull(br, b[:2]); err != nil {
		return header{}, err
	}
	rsv := b[0] & 0x70
	h := header{fin: b[0]&0x80 != 0, op: Opcode(b[0] & 0x0F), masked: b[1]&0x80 != 0, length: int64(b[1] & 0x7F)}
	switch h.length {
	case 126:
		if _, err := io.ReadFull(br, b[:2]); err != nil {
			return header{}, unexpected(err)
		}
		h.length = int64(binary.BigEndian.Uint16(b[:2]))
	case 127:
		if _, err := io.ReadFull(br, b[:8]); err != nil {
			return header{}, unexpected(err)
		}
		n := binary.BigEndian.Uint64(b[:8])
		if n>>63 != 0 {
			return header{}, fmt.Errorf("%w: payload length with its most significant bit set", ErrProtocol)
		}
		h.length = int64(n)
	}
	switch {
	case rsv != 0:
		return header{}, fmt.Errorf("%w: reserved bits 0x%02x set, no extension was negotiated", ErrProtocol, rsv)
	case h.op > OpBinary && h.op < OpClose || h.op > OpPong:
		return header{}, fmt.Errorf("%w: reserved opcode 0x%x", ErrProtocol, byte(h.op))
	case h.masked:
		return header{}, fmt.Errorf("%w: masked frame from the server (Section 5.1)", ErrProtocol)
	case h.op.control() && (!h.fin || h.length > maxControl):
		return header{}, fmt.Errorf("%w: control frame 0x%x fragmented or over %d bytes", ErrProtocol, byte(h.op), maxControl)
	}
	return h, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendFrame appends a final client frame of op carrying p, masked
// with a fresh random key (Section 5.3).
func appendFrame(dst []byte, op Opcode, p []byte) []byte {
	dst = append(dst, 0x80|byte(op))
	switch n := len(p); {
	case n <= maxControl:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xFFFF:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	var key [4]byte
	rand.Read(key[:])
	dst = append(dst, key[:]...)
	start := len(dst)
	dst = append(dst, p...)
	for i := range p {
		dst[start+i] ^= key[i&3]
	}
	return dst
}

// CloseError is the server's close frame (Section 5.5.1): the connection
// is closed.
type CloseError struct {
	Code   StatusCode // StatusNoStatusRcvd when the frame had no code
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("websocket: closed by the server: status %d %q", e.Code, e.Reason)
}

// parseClose reads a close frame's payload (Section 5.5.1): empty, or a
// status code a peer may send (Section 7.4) and a UTF-8 reason.
func parseClose(p []byte) (*CloseError, error) {
	if len(p) == 0 {
		return &CloseError{Code: StatusNoStatusRcvd}, nil
	}
	if len(p) == 1 {
		return nil, fmt.Errorf("%w: close frame of one byte", ErrProtocol)
	}
	code := StatusCode(binary.BigEndian.Uint16(p))
	valid := code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999
	if !valid {
		return nil, fmt.Errorf("%w: close status %d", ErrProtocol, code)
	}
	if !utf8.Valid(p[2:]) {
		return nil, fmt.Errorf("%w: close reason not UTF-8", ErrProtocol)
	}
	return &CloseError{Code: code, Reason: string(p[2:])}, nil
}

// closePayload is the payload of a close frame with code and reason,
// the reason cut to fit a control frame.
func closePayload(code StatusCode, reason string) []byte {
	if code == StatusNoStatusRcvd {
		return nil
	}
	p := binary.BigEndian.AppendUint16(nil, uint16(code))
	if len(reason) > maxControl-2 {
		reason = reason[:maxControl-2]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	return append(p, reason...)
}
