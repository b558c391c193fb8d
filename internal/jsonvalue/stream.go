package jsonvalue

import (
	"encoding/binary"
	"math/bits"
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
	sc := scanner{s: unsafe.String(unsafe.SliceData(doc), len(doc)), b: doc, ig: ig, out: b, scanStacks: *st}
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
	// index holds an array index spelled in decimal.
	index []byte
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

// scanner is the state of one AppendCanonicalBytes: the document (as a
// string and as the bytes it shares), the position in it, the output, and
// the stacks.
type scanner struct {
	s     string
	b     []byte
	i     int
	depth int // arrays and objects open at i
	ig    Ignore
	out   []byte
	scanStacks
}

// span is an object member written to the output: the first eight bytes
// of its name (see nameKey), where its name lies in the document (or,
// when escaped >= 0, which of names it is unescaped), and where its
// `"name":value` lies in the output. It holds no pointer, so sorting spans
// moves integers only.
type span struct {
	key                uint64
	nameStart, nameEnd int
	escaped            int
	start, end         int
}

// name is the unescaped name of a member.
func (sc *scanner) name(m *span) string {
	if m.escaped >= 0 {
		return sc.names[m.escaped]
	}
	return sc.s[m.nameStart:m.nameEnd]
}

// less reports whether member x's name sorts before member y's. The keys
// decide, but for two names that share their first eight bytes (or differ
// only by trailing NUL bytes), which are compared whole.
func (sc *scanner) less(x, y *span) bool {
	if x.key != y.key {
		return x.key < y.key
	}
	return sc.name(x) < sc.name(y)
}

// nameKey is the first eight bytes of name, big-endian, zeros after a
// shorter name: of two names whose keys differ, the one with the smaller
// key sorts first.
func nameKey(name string) uint64 {
	var k uint64
	for i := range min(len(name), 8) {
		k |= uint64(name[i]) << (56 - 8*i)
	}
	return k
}

// docNameKey is nameKey of the name at sc.s[start:end], read with one
// load when the document holds eight bytes from start.
func (sc *scanner) docNameKey(start, end int) uint64 {
	if start+8 > len(sc.b) {
		return nameKey(sc.s[start:end])
	}
	k := binary.BigEndian.Uint64(sc.b[start:])
	if n := end - start; n < 8 {
		k &^= ^uint64(0) >> (8 * n) // the bytes after the name
	}
	return k
}

// skipSpace skips the whitespace at sc.i, if any.
func (sc *scanner) skipSpace() {
	if sc.i < len(sc.s) && sc.s[sc.i] > ' ' {
		return // none, the common case
	}
	sc.skipSpaceSlow()
}

// skipSpaceSlow is skipSpace past a run of whitespace. It is kept out of
// line so that skipSpace, called between every two tokens, is inlined.
//
//go:noinline
func (sc *scanner) skipSpaceSlow() {
	i, s := sc.i, sc.s
	for i < len(s) {
		if i+8 <= len(sc.b) {
			// The spaces of an indentation, up to eight at once.
			if n := bits.TrailingZeros64(binary.LittleEndian.Uint64(sc.b[i:])^lsb*' ') >> 3; n > 0 {
				i += n
				continue
			}
		}
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	sc.i = i
}

// value reads the value at sc.i, which level containers enclose; with
// emit set it appends its canonical form, the paths of live left out.
func (sc *scanner) value(live []int, level int, emit bool) bool {
	if sc.i == len(sc.s) {
		return false
	}
	switch c := sc.s[sc.i]; {
	case c == '"':
		return sc.str(emit)
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

// object reads an object's members, sc.i just past its '{'. It writes the
// members in document order, noting whether that is the order of their
// names, and sorts them at the end only if it is not.
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
	inOrder := true
	for more := true; more; {
		var ok bool
		if emit {
			ok = sc.member(live, level, base, &inOrder)
		} else {
			ok = sc.skipMember(level)
		}
		if !ok {
			return false
		}
		if more, ok = sc.next('}'); !ok {
			return false
		}
	}
	if emit {
		if !inOrder {
			sc.sortMembers(start, base)
		}
		sc.out = append(sc.out, '}')
	}
	sc.members = sc.members[:base]
	return true
}

// colon reads the ':' after a member's name and the whitespace around it.
func (sc *scanner) colon() bool {
	sc.skipSpace()
	if sc.i == len(sc.s) || sc.s[sc.i] != ':' {
		return false
	}
	sc.i++
	sc.skipSpace()
	return true
}

// skipMember reads a member of an object that is not written.
func (sc *scanner) skipMember(level int) bool {
	if sc.i == len(sc.s) || sc.s[sc.i] != '"' {
		return false
	}
	end, _, _, ok := sc.stringEnd()
	if !ok {
		return false
	}
	sc.i = end + 1
	return sc.colon() && sc.value(nil, level+1, false)
}

// member reads a member of an object whose members start at base in
// sc.members, and writes it unless live ignores it; it clears *inOrder if
// the member's name sorts before the previous member's. The member's span
// is filled in place on the stack, so that the values below it push
// theirs above it.
func (sc *scanner) member(live []int, level, base int, inOrder *bool) bool {
	k := len(sc.members)
	if k < cap(sc.members) {
		sc.members = sc.members[:k+1]
	} else {
		sc.members = append(sc.members, span{})
	}
	verbatim, ok := sc.memberName(&sc.members[k])
	if !ok || !sc.colon() {
		return false
	}
	var next []int
	mark := len(sc.live)
	if len(live) > 0 {
		var ignored bool
		next, ignored = sc.ig.advanceInto(&sc.live, live, level, sc.name(&sc.members[k]), false)
		if ignored {
			sc.live = sc.live[:mark]
			sc.members = sc.members[:k]
			return sc.value(nil, level+1, false)
		}
	}
	m := &sc.members[k]
	if k > base {
		sc.out = append(sc.out, ',')
		if *inOrder && sc.less(m, &sc.members[k-1]) {
			*inOrder = false
		}
	}
	m.start = len(sc.out)
	if verbatim {
		sc.out = append(sc.out, sc.s[m.nameStart-1:m.nameEnd+1]...)
	} else {
		sc.out = AppendString(sc.out, sc.name(m))
	}
	sc.out = append(sc.out, ':')
	ok = sc.value(next, level+1, true)
	sc.live = sc.live[:mark]
	sc.members[k].end = len(sc.out) // m may be stale: the stack may have grown
	return ok
}

// insertionSortMax is the most members sorted by insertion; more are
// sorted by slices.SortStableFunc.
const insertionSortMax = 16

// sortMembers rewrites the members written since base in order of their
// names, the first of equal names first; the object's '{' is at start.
func (sc *scanner) sortMembers(start, base int) {
	ms := sc.members[base:]
	if len(ms) <= insertionSortMax {
		for k := 1; k < len(ms); k++ {
			for j := k; j > 0 && sc.less(&ms[j], &ms[j-1]); j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(x, y span) int {
			switch {
			case sc.less(&x, &y):
				return -1
			case sc.less(&y, &x):
				return 1
			}
			return 0
		})
	}
	sc.permute(ms, start+1)
}

// permute moves the members ms, sorted, to their places in the object
// body that starts at body: each member that moves is saved in sc.moved,
// but the longest of them, which moves once, within the output. Members
// already in their place (a sorted prefix, and a suffix behind members of
// the same total length) stay put.
func (sc *scanner) permute(ms []span, body int) {
	lo, from := 0, body
	for lo < len(ms) && ms[lo].start == from {
		from = ms[lo].end + 1
		lo++
	}
	hi, to := len(ms), len(sc.out)
	for hi > lo && ms[hi-1].end == to {
		to = ms[hi-1].start - 1
		hi--
	}
	if lo == hi {
		return
	}
	// The members ms[lo:hi] fill out[from:to], commas between.
	longest := lo
	for k := lo + 1; k < hi; k++ {
		if ms[k].end-ms[k].start > ms[longest].end-ms[longest].start {
			longest = k
		}
	}
	moved := sc.moved[:0]
	for k := lo; k < hi; k++ {
		if k != longest {
			moved = append(moved, sc.out[ms[k].start:ms[k].end]...)
		}
	}
	sc.moved = moved
	at := from
	for k := lo; k < longest; k++ {
		at += ms[k].end - ms[k].start + 1
	}
	copy(sc.out[at:], sc.out[ms[longest].start:ms[longest].end])
	at, off := from, 0
	for k := lo; k < hi; k++ {
		if k > lo {
			sc.out[at] = ','
			at++
		}
		n := ms[k].end - ms[k].start
		if k != longest {
			copy(sc.out[at:at+n], moved[off:off+n])
			off += n
		}
		at += n
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
	// The index is spelled only for a pattern that names one: "*" and "#"
	// match every element.
	named := emit && sc.ig.namesIndex(live, level)
	for n, more := 0, true; more; n++ {
		var next []int
		ignored := false
		mark := len(sc.live)
		if emit && len(live) > 0 {
			seg := ""
			if named {
				seg = sc.indexName(n)
			}
			next, ignored = sc.ig.advanceInto(&sc.live, live, level, seg, true)
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

// indexName is the array index n spelled in decimal, valid until the next
// call: the patterns compare it and keep nothing.
func (sc *scanner) indexName(n int) string {
	sc.index = strconv.AppendInt(sc.index[:0], int64(n), 10)
	return unsafe.String(unsafe.SliceData(sc.index), len(sc.index))
}

// The bytes of an eight-byte word: the lowest bit of each, and the highest.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopBytes marks, by its highest bit, each byte of x (eight bytes of a
// string literal) that a run of its content ends at: '"', '\\' and the
// control bytes. Every byte is tested on its own, with no carry between
// bytes.
func stopBytes(x uint64) uint64 {
	t := x &^ msb // each byte's low seven bits, so that no sum below carries
	// The highest bit of each sum is clear where t is below 0x20, '"' and
	// '\\' respectively.
	return ^((t + lsb*(0x80-0x20)) & ((t ^ lsb*'"') + lsb*0x7f) & ((t ^ lsb*'\\') + lsb*0x7f)) &^ x & msb
}

// unplainBytes marks, by its highest bit, each byte of x that a verbatim
// literal's run of plain bytes ends at: those of stopBytes, DEL, and the
// bytes from 0x80.
func unplainBytes(x uint64) uint64 {
	t := x &^ msb
	return (x | (t + lsb) | ^((t + lsb*(0x80-0x20)) & ((t ^ lsb*'"') + lsb*0x7f) & ((t ^ lsb*'\\') + lsb*0x7f))) & msb
}

// notPlain marks, by its highest bit, each byte of x that a run of plain
// bytes of a literal ends at: while it is verbatim, those of unplainBytes;
// after, those of stopBytes.
func notPlain(x uint64, verbatim bool) uint64 {
	if verbatim {
		return unplainBytes(x)
	}
	return stopBytes(x)
}

// stringEnd checks the string literal at sc.i and returns the offset of
// its closing quote, whether it holds an escape, and whether it is
// verbatim: printable ASCII whose escapes are all among \" \\ \b \f \n \r
// \t, so that the literal is already what AppendString appends for its
// content unescaped.
func (sc *scanner) stringEnd() (end int, escaped, verbatim, ok bool) {
	// Eight bytes at a time over the plain bytes, up to the closing quote
	// of most literals; anything else is left to stringEndSlow.
	i := sc.i + 1
	for i+8 <= len(sc.b) {
		if stop := unplainBytes(binary.LittleEndian.Uint64(sc.b[i:])); stop != 0 {
			if i += bits.TrailingZeros64(stop) >> 3; sc.b[i] == '"' {
				return i, false, true, true
			}
			break
		}
		i += 8
	}
	return sc.stringEndSlow(i)
}

// stringEndSlow is stringEnd from offset i, up to which the literal is
// plain. It reads the literal eight bytes at a time, each word's bytes
// that are not plain (escapes, most often) handled in turn without
// reading the word again.
func (sc *scanner) stringEndSlow(i int) (end int, escaped, verbatim, ok bool) {
	s, b := sc.s, sc.b
	verbatim = true
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		next := i + 8
		stop := notPlain(x, verbatim)
		for stop != 0 {
			j := i + bits.TrailingZeros64(stop)>>3
			after := j + 1 // the first byte not read yet
			switch c := b[j]; {
			case c == '"':
				return j, escaped, verbatim, true
			case c < ' ':
				return 0, false, false, false
			case c == '\\':
				n, plain, ok := escapeLen(s, j)
				if !ok {
					return 0, false, false, false
				}
				escaped, verbatim, after = true, verbatim && plain, j+n
			default:
				verbatim = false // DEL, or a byte from 0x80
			}
			if after >= next {
				next = after
				break
			}
			stop = notPlain(x, verbatim) &^ (1<<(8*(after-i)) - 1)
		}
		i = next
	}
	for i < len(s) { // the last few bytes, one at a time
		switch c := s[i]; {
		case c == '"':
			return i, escaped, verbatim, true
		case c < ' ':
			return 0, false, false, false
		case c == '\\':
			n, plain, ok := escapeLen(s, i)
			if !ok {
				return 0, false, false, false
			}
			escaped, verbatim = true, verbatim && plain
			i += n
			continue
		case c > '~':
			verbatim = false
		}
		i++
	}
	return 0, false, false, false
}

// escapeLen checks the escape at s[i], a backslash, and returns its
// length and whether it is one of \" \\ \b \f \n \r \t, which a verbatim
// literal may hold.
func escapeLen(s string, i int) (n int, plain, ok bool) {
	if i+1 == len(s) {
		return 0, false, false
	}
	switch s[i+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2, true, true
	case '/':
		return 2, false, true
	case 'u':
		if i+5 >= len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
			return 0, false, false
		}
		return 6, false, true
	}
	return 0, false, false
}

// memberName reads an object member's name into m, sc.i at its opening
// quote: its key, where it lies in the document, or, when it holds an
// escape, which of sc.names it is; and says whether the literal is
// verbatim (see stringEnd).
func (sc *scanner) memberName(m *span) (verbatim, ok bool) {
	if sc.i == len(sc.s) || sc.s[sc.i] != '"' {
		return false, false
	}
	end, escaped, verbatim, ok := sc.stringEnd()
	if !ok {
		return false, false
	}
	m.nameStart, m.nameEnd, m.escaped = sc.i+1, end, -1
	sc.i = end + 1
	if !escaped {
		m.key = sc.docNameKey(m.nameStart, end)
		return verbatim, true
	}
	sc.unescaped = unescape(sc.unescaped[:0], sc.s[m.nameStart:end])
	m.escaped = len(sc.names)
	name := string(sc.unescaped)
	sc.names = append(sc.names, name)
	m.key = nameKey(name)
	return verbatim, true
}

// str reads a string literal and, with emit set, appends its canonical
// spelling: a verbatim literal as it is, any other quoted again.
func (sc *scanner) str(emit bool) bool {
	start := sc.i
	end, escaped, verbatim, ok := sc.stringEnd()
	if !ok {
		return false
	}
	sc.i = end + 1
	switch {
	case !emit:
		return true
	case verbatim:
		sc.out = append(sc.out, sc.s[start:end+1]...)
		return true
	case !escaped:
		sc.out = AppendString(sc.out, sc.s[start+1:end])
		return true
	}
	sc.unescaped = unescape(sc.unescaped[:0], sc.s[start+1:end])
	sc.out = AppendString(sc.out, unsafe.String(unsafe.SliceData(sc.unescaped), len(sc.unescaped))) // read at once, kept nowhere
	return true
}

// number reads a JSON number and appends its canonical spelling: an
// integer of at most 20 digits is its own, but "-0".
func (sc *scanner) number(emit bool) bool {
	s, start := sc.s, sc.i
	i := start
	if s[i] == '-' {
		i++
	}
	first := i
	switch {
	case i == len(s) || s[i] < '0' || s[i] > '9':
		return false
	case s[i] == '0':
		i++
	default:
		i = digitsEnd(s, i)
	}
	integer := i - first // digits of an integer; 0 for another number
	if i < len(s) && s[i] == '.' {
		integer = 0
		if i++; i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		i = digitsEnd(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		integer = 0
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		i = digitsEnd(s, i)
	}
	sc.i = i
	switch raw := s[start:i]; {
	case !emit:
		return true
	case integer > 0 && integer <= 20 && raw != "-0":
		sc.out = append(sc.out, raw...)
		return true
	}
	out, err := AppendNumber(sc.out, s[start:i])
	if err != nil {
		return false // out of range: the general path says where
	}
	sc.out = out
	return true
}

// digitsEnd returns the offset of the first byte at or after i that is not
// a decimal digit.
func digitsEnd[T ~string | ~[]byte](s T, i int) int {
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
		if e, ok := escaped(raw[i]); ok {
			b = append(b, e)
			continue
		}
		switch raw[i] {
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
