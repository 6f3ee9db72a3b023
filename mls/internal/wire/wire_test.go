package wire

import (
	"testing"

	"golang.org/x/crypto/cryptobyte"
)

func TestVarint(t *testing.T) {
	tests := []struct {
		in   []byte
		want uint64
		ok   bool
	}{
		{[]byte{0x00}, 0, true},
		{[]byte{0x3f}, 63, true},
		{[]byte{0x40, 0x40}, 64, true},
		{[]byte{0x7f, 0xff}, 16383, true},
		{[]byte{0x80, 0x00, 0x40, 0x00}, 16384, true},
		{[]byte{0xbf, 0xff, 0xff, 0xff}, MaxVarint, true},
		{[]byte{0x40, 0x3f}, 0, false},             // non-minimal (63 in two bytes)
		{[]byte{0x40, 0x00}, 0, false},             // non-minimal zero
		{[]byte{0x80, 0x00, 0x3f, 0xff}, 0, false}, // non-minimal (16383 in four bytes)
		{[]byte{0xc0, 0, 0, 0, 0, 0, 0, 1}, 0, false},
		{[]byte{0x40}, 0, false}, // truncated
		{[]byte{0x80, 0x01}, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		s := cryptobyte.String(tt.in)
		var got uint64
		ok := ReadVarint(&s, &got)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ReadVarint(%x) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if tt.ok {
			if enc := AppendVarint(nil, tt.want); string(enc) != string(tt.in) {
				t.Errorf("AppendVarint(%d) = %x, want %x", tt.want, enc, tt.in)
			}
		}
	}
}

func TestVarBytesTruncated(t *testing.T) {
	s := cryptobyte.String([]byte{0x05, 1, 2, 3})
	var out []byte
	if ReadVarBytes(&s, &out) {
		t.Error("ReadVarBytes accepted a vector longer than its input")
	}
}

func FuzzVarint(f *testing.F) {
	f.Add([]byte{0x40, 0x40})
	f.Add([]byte{0xbf, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := cryptobyte.String(in)
		var n uint64
		if !ReadVarint(&s, &n) {
			return
		}
		enc := AppendVarint(nil, n)
		if string(enc) != string(in[:len(in)-len(s)]) {
			t.Fatalf("re-encoding %x gave %x", in[:len(in)-len(s)], enc)
		}
	})
}

func TestVarintError(t *testing.T) {
	tests := []struct {
		in   []byte
		want string // "" for a valid header
	}{
		{[]byte{0x05}, ""},
		{[]byte{0x40, 0x40}, ""},
		{nil, "truncated length header, need 1 byte, have 0"},
		{[]byte{0x40}, "truncated length header, need 2 bytes, have 1"},
		{[]byte{0x80, 0x01}, "truncated length header, need 4 bytes, have 2"},
		{[]byte{0xc0, 0, 0, 0, 0, 0, 0, 1}, "length header 0xc0 uses the reserved prefix 0b11"},
		{[]byte{0x40, 0x3f}, "length header 40 3f is not minimal"},
		{[]byte{0x80, 0x00, 0x3f, 0xff, 0x00}, "length header 80 00 3f ff is not minimal"},
	}
	for _, tt := range tests {
		err := VarintError(tt.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("VarintError(%x) = %q, want %q", tt.in, got, tt.want)
		}
		s := cryptobyte.String(tt.in)
		var n uint64
		if ok := ReadVarint(&s, &n); ok != (tt.want == "") {
			t.Errorf("ReadVarint(%x) ok = %v, but VarintError says %q", tt.in, ok, got)
		}
	}
}
