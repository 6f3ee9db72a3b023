package a2a

// validJSON reports whether b is one JSON text (RFC 8259) as json.Valid
// does, with its limit of 10,000 nested arrays and objects, and accepts
// what it accepts (bytes of invalid UTF-8 inside strings among them); it
// is a walk without encoding/json's per-byte state functions, about four
// times faster on a body of base64 strings. TestValidJSONAsValid and its
// fuzz target compare the two.
func validJSON(b []byte) bool {
	stack := make([]byte, 0, 16) // the open containers: '{' or '['
	i := 0
	for {
		var open byte
		var ok bool
		if i = skipJSONSpace(b, i); i < len(b) && (b[i] == '{' || b[i] == '[') && len(stack) >= maxJSONNesting {
			return false // empty or not, as encoding/json counts
		}
		if i, open, ok = jsonValue(b, i); !ok {
			return false
		}
		if open != 0 {
			stack = append(stack, open)
			if open == '{' {
				if i, ok = jsonKey(b, i); !ok {
					return false
				}
			}
			continue
		}
		// After a value: close containers, or a comma and the next one.
		for {
			i = skipJSONSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i == len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if c := b[i]; c == ',' {
				i++
				if top == '{' {
					if i, ok = jsonKey(b, i); !ok {
						return false
					}
				}
				break
			} else if (top == '{' && c == '}') || (top == '[' && c == ']') {
				stack, i = stack[:len(stack)-1], i+1
				continue
			}
			return false
		}
	}
}

// maxJSONNesting is encoding/json's limit on nesting.
const maxJSONNesting = 10000

// jsonKey reads, from b[i], white space, a member name and its colon.
func jsonKey(b []byte, i int) (int, bool) {
	i = skipJSONSpace(b, i)
	if i == len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := jsonString(b, i)
	if !ok {
		return i, false
	}
	if i = skipJSONSpace(b, i); i == len(b) || b[i] != ':' {
		return i, false
	}
	return i + 1, true
}

// jsonValue reads the value at b[i]: a scalar, an empty object or array,
// or the start of a non-empty one, whose bracket it returns as open.
func jsonValue(b []byte, i int) (end int, open byte, ok bool) {
	if i == len(b) {
		return i, 0, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		j := skipJSONSpace(b, i+1)
		if j < len(b) && b[j] == c+2 { // '{'+2 is '}', '['+2 is ']'
			return j + 1, 0, true
		}
		return i + 1, c, true
	case c == '"':
		end, ok = jsonString(b, i)
		return end, 0, ok
	case c == '-' || ('0' <= c && c <= '9'):
		end, ok = jsonNumber(b, i)
		return end, 0, ok
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), 0, true
		}
	}
	return i, 0, false
}

// jsonString reads the string whose quote is b[i] and returns the index
// past its closing quote.
func jsonString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i == len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// jsonNumber reads the number at b[i]: -? (0 | [1-9][0-9]*) (. [0-9]+)?
// ([eE] [+-]? [0-9]+)?.
func jsonNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	var ok bool
	switch {
	case i < len(b) && b[i] == '0':
		i++
	default:
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}
