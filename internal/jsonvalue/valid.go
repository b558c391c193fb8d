package jsonvalue

// ValidMaxDepth is the deepest nesting of arrays and objects Valid accepts,
// encoding/json's own limit.
const ValidMaxDepth = 10000

// Valid reports whether b is one JSON value, with only whitespace around
// it, exactly when encoding/json's Valid does: the grammar of RFC 8259
// (literals, numbers, strings with their escapes and no control
// characters, arrays, objects), UTF-8 not checked, at most ValidMaxDepth
// levels of nesting. It reads b once, without recursion, so that no
// document can grow the stack, and allocates nothing.
func Valid(b []byte) bool {
	var objects [ValidMaxDepth/64 + 1]uint64 // bit n: level n is an object
	depth, i := 0, 0
	for {
		// A value starts at i, after whitespace.
		i = skipWhite(b, i)
		if i >= len(b) {
			return false
		}
		opened := false
		switch c := b[i]; c {
		case '{', '[':
			if depth == ValidMaxDepth {
				return false
			}
			isObject := c == '{'
			if isObject {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			if i = skipWhite(b, i+1); i < len(b) && (isObject && b[i] == '}' || !isObject && b[i] == ']') {
				i++
				depth--
				break // an empty container: a whole value
			}
			if isObject {
				i = memberName(b, i)
			}
			opened = true
		case '"':
			i = validString(b, i+1)
		case 't':
			i = literal(b, i, "true")
		case 'f':
			i = literal(b, i, "false")
		case 'n':
			i = literal(b, i, "null")
		default:
			i = validNumber(b, i)
		}
		if i < 0 {
			return false
		}
		if opened {
			continue
		}
		// A whole value ends before i: close what it ends, or go on to the
		// next element or member.
		for {
			i = skipWhite(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			isObject := objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			if b[i] == ',' {
				i++
				if isObject {
					if i = memberName(b, skipWhite(b, i)); i < 0 {
						return false
					}
				}
				break
			}
			if isObject && b[i] == '}' || !isObject && b[i] == ']' {
				i++
				depth--
				continue
			}
			return false
		}
	}
}

// skipWhite returns the offset of the first byte at or after i that is
// not JSON whitespace.
func skipWhite(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// memberName reads `"name" :` at i and returns the offset after the
// colon, or -1.
func memberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i+1); i < 0 {
		return -1
	}
	if i = skipWhite(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// plainByte marks the bytes a string holds as they are: all but the
// control characters, the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString reads the rest of a string whose content starts at i and
// returns the offset after its closing quote, or -1.
func validString(b []byte, i int) int {
	for {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			if _, ok := escaped(b[i+1]); ok {
				i += 2
				continue
			}
			if b[i+1] != 'u' || i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return -1
			}
			i += 6
		default:
			return -1 // a control character
		}
	}
}

// literal reads word at i and returns the offset after it, or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// validNumber reads a number at i and returns the offset after it, or -1:
// an optional minus, 0 or digits not starting with 0, an optional
// fraction, an optional exponent.
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digitsEnd(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digitsEnd(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digitsEnd(b, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}
