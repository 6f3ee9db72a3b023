package did

import (
	"errors"
	"math/big"
)

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

var big58 = big.NewInt(58)

func encodeBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big58, mod)
		out = append(out, alphabet[mod.Int64()])
	}
	for range zeros {
		out = append(out, alphabet[0])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

func decodeBase58(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty base58 string")
	}
	if len(s) > 128 {
		return nil, errors.New("base58 string too long")
	}
	n := new(big.Int)
	zeros := 0
	for zeros < len(s) && s[zeros] == alphabet[0] {
		zeros++
	}
	for i := range len(s) {
		v := decodeMap[s[i]]
		if v < 0 {
			return nil, errors.New("invalid base58 character")
		}
		n.Mul(n, big58)
		n.Add(n, big.NewInt(int64(v)))
	}
	return append(make([]byte, zeros), n.Bytes()...), nil
}
