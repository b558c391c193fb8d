package jsonvalue

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes a JSON string literal into a new byte slice, exactly as
// encoding/json would, in one pass. Replay decodes every body it serves and
// mock every tool result it checks, so this is on their hot paths: going
// through json.Unmarshal into a string validated and copied each twice
// more. ok is false for anything
// that is not a plain valid string literal (raw control bytes, a stray
// quote, a bad escape, invalid UTF-8), for the caller to hand to
// encoding/json, which reports or repairs it its own way.
func Unquote(lit []byte) (out []byte, ok bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, false
	}
	s := lit[1 : len(lit)-1]
	out = make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && !unquoteSpecial[s[i]] {
			i++
		}
		out = append(out, s[start:i]...)
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, s[i:i+n]...)
			i += n
		case c != '\\' || i+1 == len(s):
			return nil, false
		default:
			e := s[i+1]
			i += 2
			if c, ok := escaped(e); ok {
				out = append(out, c)
				continue
			}
			switch e {
			case 'u':
				r, ok := escapeHex(s[i:])
				if !ok {
					return nil, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A high surrogate joins the low one escaped right after
					// it; anything else is U+FFFD, as encoding/json has it.
					r2, ok := rune(-1), false
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok = escapeHex(s[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, false
			}
		}
	}
	return out, true
}

// unquoteSpecial marks the bytes that end a plain run in a string literal:
// control bytes, the quote, the backslash and non-ASCII.
var unquoteSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf
	}
	return t
}()

// escapeHex reads the four hex digits of a \u escape.
func escapeHex(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// escaped is the byte a one-character escape stands for: \" \\ \/ \b \f \n
// \r \t (e is the character after the backslash); ok is false for any
// other, \u included.
func escaped(e byte) (c byte, ok bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
