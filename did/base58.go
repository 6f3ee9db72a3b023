package did

import "errors"

// The Bitcoin base58 alphabet used by multibase "z" (base58btc).
const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

var decodeMap = func() [256]int8 {
	var m [256]int8
	for i := range m {
		m[i] = -1
	}
	for i := range len(alphabet) {
		m[alphabet[i]] = int8(i)
	}
	return m
}()

// encodeBase58 is the base conversion of b, a big-endian number, to base
// 58 digits, one leading '1' for each leading zero byte (base58btc,
// draft-msporny-base58-03, Section 3). The digits are kept little-endian
// in a byte slice and multiplied by 256 per input byte: quadratic in the
// length, which for a DID's 34 bytes is cheaper than math/big.
func encodeBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// log(256)/log(58) < 1.37: the digits the number needs.
	digits := make([]byte, 0, (len(b)-zeros)*137/100+1)
	for _, c := range b[zeros:] {
		carry := int(c)
		for i := range digits {
			carry += int(digits[i]) << 8
			digits[i] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append(digits, byte(carry%58))
			carry /= 58
		}
	}
	out := make([]byte, zeros+len(digits))
	for i := range zeros {
		out[i] = alphabet[0]
	}
	for i, d := range digits {
		out[len(out)-1-i] = alphabet[d]
	}
	return string(out)
}

// decodeBase58 is the inverse of encodeBase58: the number's big-endian
// bytes after one zero byte for each leading '1'.
func decodeBase58(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty base58 string")
	}
	if len(s) > 128 {
		return nil, errors.New("base58 string too long")
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == alphabet[0] {
		zeros++
	}
	// log(58)/log(256) < 0.74: the bytes the number needs, little-endian.
	num := make([]byte, 0, len(s)*74/100+1)
	for i := range len(s) {
		v := decodeMap[s[i]]
		if v < 0 {
			return nil, errors.New("invalid base58 character")
		}
		carry := int(v)
		for j := range num {
			carry += int(num[j]) * 58
			num[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			num = append(num, byte(carry))
			carry >>= 8
		}
	}
	out := make([]byte, zeros+len(num))
	for i, c := range num {
		out[len(out)-1-i] = c
	}
	return out, nil
}
