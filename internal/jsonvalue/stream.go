package jsonvalue

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// AppendCanonicalBytes appends the canonical form of the JSON document doc,
// the paths of ig left out: the very bytes AppendCanonical appends for doc
// parsed, computed in one pass over doc that checks its syntax and its
// depth as it goes, with no parsed tree and, for a document without
// escapes or numbers out of range, a few allocations however large it is.
//
// It handles the common case only. ok is false, and b is returned
// unchanged, when doc is not an object or an array (after whitespace), is
// not valid JSON, nests deeper than MaxDepth, or holds a number out of range
// where it is not ignored: the caller then takes the general path (Parse,
// then AppendCanonical), which says which.
func (ig Ignore) AppendCanonicalBytes(b []byte, doc []byte) (out []byte, ok bool) {
	st := stacks.Get().(*scanStacks)
	defer st.free()
	// The scanner lives on the stack, so that the many writes of its
	// output and position are plain stores. It reads doc as a string
	// without copying it: nothing it keeps outlives this call (names are
	// compared and written out, never stored), and doc is not changed
	// while it runs.
	sc := scanner{s: unsafe.String(unsafe.SliceData(doc), len(doc)), ig: ig, out: b, scanStacks: *st}
	defer func() { *st = sc.scanStacks }()
	sc.skipSpace()
	if sc.i == len(sc.s) || (sc.s[sc.i] != '{' && sc.s[sc.i] != '[') {
		return b, false
	}
	for k := range ig {
		sc.live = append(sc.live, k)
	}
	if !sc.value(sc.live[:len(ig):len(ig)], 0, true) {
		return b, false
	}
	if sc.skipSpace(); sc.i != len(sc.s) {
		return b, false
	}
	return sc.out, true
}

// stacks keep the stacks of AppendCanonicalBytes between calls.
var stacks = sync.Pool{New: func() any { return new(scanStacks) }}

// maxPooledScratch bounds the scratch buffers kept in stacks, so that one
// huge document does not pin its size in memory.
const maxPooledScratch = 1 << 20

// scanStacks are the stacks of a scanner, shared by every level of the
// walk, each level using the part above its caller's.
type scanStacks struct {
	// members are the members of the objects open, in document order.
	members []span
	// names holds the names of members that are written with escapes,
	// unescaped.
	names []string
	// live holds the live pattern sets of the levels open.
	live []int
	// moved holds an object's members while they are written back sorted.
	moved []byte
	// unescaped holds a string with escapes, unescaped.
	unescaped []byte
}

// free empties the stacks and puts them back in the pool.
func (st *scanStacks) free() {
	st.members, st.live = st.members[:0], st.live[:0]
	clear(st.names)
	st.names = st.names[:0]
	if cap(st.moved) > maxPooledScratch {
		st.moved = nil
	}
	if cap(st.unescaped) > maxPooledScratch {
		st.unescaped = nil
	}
	stacks.Put(st)
}

// scanner is the state of one AppendCanonicalBytes: the document, the
// position in it, the output, and the stacks.
type scanner struct {
	s     string
	i     int
	depth int // arrays and objects open at i
	ig    Ignore
	out   []byte
	scanStacks
}

// span is an object member written to the output: where its name lies in
// the document (or, when escaped >= 0, which of names it is unescaped),
// whether the name is plain (see stringEnd), and where its `"name":value`
// lies in the output. It holds no pointer, so sorting spans moves integers
// only.
type span struct {
	nameStart, nameEnd int
	escaped            int
	plain              bool
	start, end         int
}

// name is the unescaped name of a member.
func (sc *scanner) name(m span) string {
	if m.escaped >= 0 {
		return sc.names[m.escaped]
	}
	return sc.s[m.nameStart:m.nameEnd]
}

func (sc *scanner) skipSpace() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value reads the value at sc.i, which level containers enclose; with
// emit set it appends its canonical form, the paths of live left out.
func (sc *scanner) value(live []int, level int, emit bool) bool {
	if sc.i == len(sc.s) {
		return false
	}
	switch c := sc.s[sc.i]; {
	case c == '{' || c == '[':
		sc.i++
		if sc.depth++; sc.depth > MaxDepth {
			return false
		}
		ok := false
		if c == '{' {
			ok = sc.object(live, level, emit)
		} else {
			ok = sc.array(live, level, emit)
		}
		sc.depth--
		return ok
	case c == '"':
		return sc.str(emit)
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number(emit)
	case c == 't':
		return sc.literal("true", emit)
	case c == 'f':
		return sc.literal("false", emit)
	case c == 'n':
		return sc.literal("null", emit)
	}
	return false
}

func (sc *scanner) literal(word string, emit bool) bool {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return false
	}
	sc.i += len(word)
	if emit {
		sc.out = append(sc.out, word...)
	}
	return true
}

// next reads the separator after a member or element: true with more set
// after a comma, true with more unset after the closing byte.
func (sc *scanner) next(closing byte) (more, ok bool) {
	sc.skipSpace()
	if sc.i == len(sc.s) {
		return false, false
	}
	switch sc.s[sc.i] {
	case ',':
		sc.i++
		sc.skipSpace()
		return true, true
	case closing:
		sc.i++
		return false, true
	}
	return false, false
}

// object reads an object's members, sc.i just past its '{'.
func (sc *scanner) object(live []int, level int, emit bool) bool {
	start, base := len(sc.out), len(sc.members)
	if emit {
		sc.out = append(sc.out, '{')
	}
	sc.skipSpace()
	if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
		sc.i++
		if emit {
			sc.out = append(sc.out, '}')
		}
		return true
	}
	for more := true; more; {
		m, ok := sc.memberName()
		if !ok {
			return false
		}
		name := sc.name(m)
		sc.skipSpace()
		if sc.i == len(sc.s) || sc.s[sc.i] != ':' {
			return false
		}
		sc.i++
		sc.skipSpace()
		mark := len(sc.live)
		next, ignored := sc.ig.advanceInto(&sc.live, live, level, name, false)
		if !emit || ignored {
			ok = sc.value(nil, level+1, false)
		} else {
			if len(sc.members) > base {
				sc.out = append(sc.out, ',')
			}
			m.start = len(sc.out)
			sc.out = sc.appendName(m, name)
			sc.out = append(sc.out, ':')
			ok = sc.value(next, level+1, true)
			m.end = len(sc.out)
			sc.members = append(sc.members, m)
		}
		sc.live = sc.live[:mark]
		if !ok {
			return false
		}
		if more, ok = sc.next('}'); !ok {
			return false
		}
	}
	if emit {
		sc.sortMembers(start, base)
		sc.out = append(sc.out, '}')
	}
	sc.members = sc.members[:base]
	return true
}

// sortMembers rewrites the members written since base in order of their
// names, the first of equal names first, if they are not in that order
// already; the object's '{' is at start.
func (sc *scanner) sortMembers(start, base int) {
	ms := sc.members[base:]
	byName := func(x, y span) int { return strings.Compare(sc.name(x), sc.name(y)) }
	if slices.IsSortedFunc(ms, byName) {
		return
	}
	body := start + 1
	sc.moved = append(sc.moved[:0], sc.out[body:]...)
	slices.SortStableFunc(ms, byName)
	sc.out = sc.out[:body]
	for k, m := range ms {
		if k > 0 {
			sc.out = append(sc.out, ',')
		}
		sc.out = append(sc.out, sc.moved[m.start-body:m.end-body]...)
	}
}

// array reads an array's elements, sc.i just past its '['.
func (sc *scanner) array(live []int, level int, emit bool) bool {
	if emit {
		sc.out = append(sc.out, '[')
	}
	sc.skipSpace()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
		if emit {
			sc.out = append(sc.out, ']')
		}
		return true
	}
	written := 0
	for n, more := 0, true; more; n++ {
		var next []int
		ignored := false
		mark := len(sc.live)
		if emit && len(live) > 0 {
			next, ignored = sc.ig.advanceInto(&sc.live, live, level, strconv.Itoa(n), true)
		}
		var ok bool
		if !emit || ignored {
			ok = sc.value(nil, level+1, false)
		} else {
			if written > 0 {
				sc.out = append(sc.out, ',')
			}
			written++
			ok = sc.value(next, level+1, true)
		}
		sc.live = sc.live[:mark]
		if !ok {
			return false
		}
		if more, ok = sc.next(']'); !ok {
			return false
		}
	}
	if emit {
		sc.out = append(sc.out, ']')
	}
	return true
}

// stringEnd checks the string literal at sc.i and returns the offset of
// its closing quote, whether it holds an escape, and whether it is plain:
// printable ASCII without escapes, its own canonical spelling.
func (sc *scanner) stringEnd() (end int, escaped, plain, ok bool) {
	s := sc.s
	plain = true
	for i := sc.i + 1; i < len(s); i++ {
		for i < len(s) && plainByte[s[i]] {
			i++ // the common bytes, skipped by one table look-up each
		}
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"':
			return i, escaped, plain, true
		case c < ' ':
			return 0, false, false, false
		case c > '~':
			plain = false
		case c == '\\':
			escaped, plain = true, false
			if i++; i == len(s) {
				return 0, false, false, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return 0, false, false, false
				}
				i += 4
			default:
				return 0, false, false, false
			}
		}
	}
	return 0, false, false, false
}

// memberName reads an object member's name: where it lies in the
// document, or, when it holds an escape, which of sc.names it is.
func (sc *scanner) memberName() (span, bool) {
	if sc.i == len(sc.s) || sc.s[sc.i] != '"' {
		return span{}, false
	}
	end, escaped, plain, ok := sc.stringEnd()
	if !ok {
		return span{}, false
	}
	m := span{nameStart: sc.i + 1, nameEnd: end, escaped: -1, plain: plain}
	sc.i = end + 1
	if escaped {
		sc.unescaped = unescape(sc.unescaped[:0], sc.s[m.nameStart:m.nameEnd])
		m.escaped = len(sc.names)
		sc.names = append(sc.names, string(sc.unescaped))
	}
	return m, true
}

// appendName appends a member's name in canonical spelling.
func (sc *scanner) appendName(m span, name string) []byte {
	if m.plain {
		return append(append(append(sc.out, '"'), name...), '"')
	}
	return AppendString(sc.out, name)
}

func (sc *scanner) str(emit bool) bool {
	end, escaped, plain, ok := sc.stringEnd()
	if !ok {
		return false
	}
	raw := sc.s[sc.i+1 : end]
	sc.i = end + 1
	switch {
	case !emit:
		return true
	case plain:
		sc.out = append(append(append(sc.out, '"'), raw...), '"')
		return true
	case !escaped:
		sc.out = AppendString(sc.out, raw)
		return true
	}
	sc.unescaped = unescape(sc.unescaped[:0], raw)
	sc.out = appendStringBytes(sc.out, sc.unescaped)
	return true
}

// number reads a JSON number and appends its canonical spelling.
func (sc *scanner) number(emit bool) bool {
	s, start := sc.s, sc.i
	i := start
	if s[i] == '-' {
		i++
	}
	switch {
	case i == len(s) || s[i] < '0' || s[i] > '9':
		return false
	case s[i] == '0':
		i++
	default:
		i = digitsEnd(s, i)
	}
	if i < len(s) && s[i] == '.' {
		if i++; i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		i = digitsEnd(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		i = digitsEnd(s, i)
	}
	sc.i = i
	if !emit {
		return true
	}
	out, err := AppendNumber(sc.out, s[start:i])
	if err != nil {
		return false // out of range: the general path says where
	}
	sc.out = out
	return true
}

// plainByte marks the bytes a string literal holds as they are in its
// canonical spelling: printable ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := ' '; c <= '~'; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// unescape appends the string literal content raw with its escapes
// replaced, exactly as gjson, which the general path reads documents with,
// replaces them: a surrogate pair is one character, and a lone surrogate
// U+FFFD.
func unescape(b []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < ' ' {
			return b
		}
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i++; i == len(raw) {
			return b
		}
		switch raw[i] {
		case '\\', '/', '"':
			b = append(b, raw[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if i+5 > len(raw) {
				return b
			}
			r := hex4(raw[i+1:])
			i += 5
			if r >= 0xD800 && r < 0xDC00 && len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
				if r2 := hex4(raw[i+2:]); r2 >= 0xDC00 && r2 < 0xE000 {
					r = utf16.DecodeRune(r, r2)
					i += 6
				}
			}
			b = utf8.AppendRune(b, r)
			i--
		default:
			return b
		}
	}
	return b
}

// hex4 reads four hexadecimal digits; 0 when they are not.
func hex4(s string) rune {
	n, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil {
		return 0
	}
	return rune(n)
}

// appendStringBytes is AppendString for bytes.
func appendStringBytes(b, s []byte) []byte {
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return strconv.AppendQuote(b, string(s))
		}
	}
	b = append(b, '"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return append(b, '"')
}
