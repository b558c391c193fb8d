package jsonvalue

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/match"
)

// MaxDepth bounds the nesting of a document that Canonical and Equal read:
// canonicalising costs the document's size times its depth, and the walk
// recurses once per level.
const MaxDepth = 128

// A Pattern is a parsed ignore path: dot-separated segments in gjson
// syntax, where "*" matches any member or element, "#" any element, and
// other segments may use gjson's * and ? wildcards; "\" escapes the next
// character.
type Pattern []string

// ParsePattern parses an ignore path; ok is false for an empty path or an
// empty segment.
func ParsePattern(p string) (Pattern, bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return nil, false
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case c == '.':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	segs = append(segs, cur.String())
	for _, s := range segs {
		if s == "" {
			return nil, false
		}
	}
	return segs, true
}

func (p Pattern) matchSeg(depth int, seg string, index bool) bool {
	s := p[depth]
	if s == "*" || (s == "#" && index) {
		return true
	}
	if s == seg {
		return true
	}
	return match.IsPattern(s) && match.Match(seg, s)
}

// Ignore is a set of patterns whose paths are left out of canonical forms
// and differences. The nil Ignore leaves nothing out.
type Ignore []Pattern

// advance returns the patterns of live still matching below the member or
// element seg at depth, and whether one of them ends there (the value is
// ignored). A nil live set means none.
func (ig Ignore) advance(live []int, depth int, seg string, index bool) (next []int, ignored bool) {
	for _, pi := range live {
		p := ig[pi]
		if depth >= len(p) || !p.matchSeg(depth, seg, index) {
			continue
		}
		if depth == len(p)-1 {
			return nil, true
		}
		next = append(next, pi)
	}
	return next, false
}

// all is the live set at the root: every pattern.
func (ig Ignore) all() []int {
	live := make([]int, len(ig))
	for i := range live {
		live[i] = i
	}
	return live
}

// AppendCanonical appends the canonical form of v, the paths of ig left
// out: object members sorted by name (a repeated name keeps its values in
// order), no whitespace, strings and numbers in canonical spelling (see
// AppendString and AppendNumber). v must be valid JSON no deeper than the
// caller's bound. A number out of range is an error wrapping ErrNumberRange
// that names its path.
func (ig Ignore) AppendCanonical(b []byte, v gjson.Result) ([]byte, error) {
	var st canonState
	return ig.appendCanonical(&st, b, v, ig.all(), 0)
}

func (ig Ignore) appendCanonical(st *canonState, b []byte, v gjson.Result, live []int, depth int) ([]byte, error) {
	b = ig.canonInto(st, b, v, live, depth)
	if st.err != nil {
		return b, st.err
	}
	return b, nil
}

// canonState is the scratch space of one canonicalisation: the members of
// the objects being sorted and the live pattern sets, kept as stacks so
// that a whole body costs a few allocations instead of several per value,
// and the first number out of range.
type canonState struct {
	kvs  []member
	live []int
	err  *numberError
}

type member struct {
	k string
	v gjson.Result
}

// advanceInto is advance with the next live set pushed onto *stack; the
// caller truncates *stack back to its length before the call.
func (ig Ignore) advanceInto(stack *[]int, live []int, depth int, seg string, index bool) (next []int, ignored bool) {
	st := *stack
	base := len(st)
	for _, pi := range live {
		p := ig[pi]
		if depth >= len(p) || !p.matchSeg(depth, seg, index) {
			continue
		}
		if depth == len(p)-1 {
			*stack = st[:base]
			return nil, true
		}
		st = append(st, pi)
	}
	*stack = st
	if len(st) == base {
		return nil, false
	}
	return st[base:len(st):len(st)], false
}

// namesIndex reports whether a pattern of live matches an element at depth
// by its index: one whose segment there is neither "*" nor "#", which
// match any element whatever its index.
func (ig Ignore) namesIndex(live []int, depth int) bool {
	for _, pi := range live {
		if p := ig[pi]; depth < len(p) && p[depth] != "*" && p[depth] != "#" {
			return true
		}
	}
	return false
}

// canonInto appends the canonical form of v. It stops at the first number
// out of range, leaving it in st.err with its path.
func (ig Ignore) canonInto(st *canonState, b []byte, v gjson.Result, live []int, depth int) []byte {
	switch {
	case v.IsObject():
		// Children push their own members after these, so this object's
		// stay put (or stay in the old array if the stack grows).
		base := len(st.kvs)
		v.ForEach(func(k, val gjson.Result) bool {
			st.kvs = append(st.kvs, member{k.String(), val})
			return true
		})
		kvs := st.kvs[base:len(st.kvs):len(st.kvs)]
		slices.SortStableFunc(kvs, func(x, y member) int { return strings.Compare(x.k, y.k) })
		b = append(b, '{')
		first := true
		for _, e := range kvs {
			mark := len(st.live)
			next, ignored := ig.advanceInto(&st.live, live, depth, e.k, false)
			if ignored {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendString(b, e.k)
			b = append(b, ':')
			b = ig.canonInto(st, b, e.v, next, depth+1)
			st.live = st.live[:mark]
			if st.err != nil {
				st.err.path = append(st.err.path, e.k)
				break
			}
		}
		st.kvs = st.kvs[:base]
		return append(b, '}')
	case v.IsArray():
		b = append(b, '[')
		n := 0
		first := true
		v.ForEach(func(_, val gjson.Result) bool {
			var next []int
			mark := len(st.live)
			if len(live) > 0 {
				var ignored bool
				next, ignored = ig.advanceInto(&st.live, live, depth, strconv.Itoa(n), true)
				if ignored {
					n++
					return true
				}
			}
			n++
			if !first {
				b = append(b, ',')
			}
			first = false
			b = ig.canonInto(st, b, val, next, depth+1)
			st.live = st.live[:mark]
			if st.err != nil {
				st.err.path = append(st.err.path, strconv.Itoa(n-1))
				return false
			}
			return true
		})
		return append(b, ']')
	}
	b, err := appendLeaf(b, v)
	if err != nil {
		st.err = err
	}
	return b
}

// AppendString appends s quoted exactly as strconv.AppendQuote does (the
// canonical form, and so every match key, depends on it): printable
// runes as they are but '"' and '\\' escaped, and the others escaped as
// that quoting escapes them. Runs of printable ASCII are copied whole;
// only the other runes are read one by one.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	for len(s) > 0 {
		n := plainPrefix(s)
		b = append(b, s[:n]...)
		if s = s[n:]; s == "" {
			break
		}
		switch c := s[0]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			s = s[1:]
		case c < utf8.RuneSelf: // a control byte or DEL
			b = appendQuotedRune(b, s[:1])
			s = s[1:]
		default:
			r, w := utf8.DecodeRuneInString(s)
			if w > 1 && strconv.IsPrint(r) {
				b = append(b, s[:w]...) // valid UTF-8 is its own encoding
			} else {
				b = appendQuotedRune(b, s[:w])
			}
			s = s[w:]
		}
	}
	return append(b, '"')
}

// plainPrefix is the length of the printable ASCII at the start of s, up
// to the first '"' or '\\', read eight bytes at a time.
func plainPrefix(s string) int {
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if stop := unplainBytes(binary.LittleEndian.Uint64(b[i:])); stop != 0 {
			return i + bits.TrailingZeros64(stop)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// appendQuotedRune appends the spelling strconv.AppendQuote gives the one
// rune (or byte that is not UTF-8) r inside its quotes: it quotes every
// rune on its own.
func appendQuotedRune(b []byte, r string) []byte {
	start := len(b)
	b = strconv.AppendQuote(b, r)
	n := copy(b[start:], b[start+1:len(b)-1])
	return b[:start+n]
}

// appendLeaf appends the canonical spelling of a scalar.
func appendLeaf(b []byte, v gjson.Result) ([]byte, *numberError) {
	switch v.Type {
	case gjson.String:
		return AppendString(b, v.Str), nil
	case gjson.Number:
		out, err := AppendNumber(b, v.Raw)
		if err != nil {
			var ne *numberError
			errors.As(err, &ne)
			return out, ne
		}
		return out, nil
	case gjson.True:
		return append(b, "true"...), nil
	case gjson.False:
		return append(b, "false"...), nil
	case gjson.Null:
		return append(b, "null"...), nil
	}
	return append(b, v.Raw...), nil
}

// Parse validates doc as one JSON value no deeper than MaxDepth and returns
// it parsed. A document that is not JSON wraps ErrMalformed; one too deep,
// ErrTooDeep.
func Parse(doc []byte) (gjson.Result, error) {
	if NestedDeeper(doc, MaxDepth) {
		// Before the validator, which recurses once per level.
		return gjson.Result{}, ErrTooDeep
	}
	if !gjson.ValidBytes(doc) {
		return gjson.Result{}, ErrMalformed
	}
	return gjson.ParseBytes(doc), nil
}

// Canonical returns the canonical form of the JSON document doc (see
// AppendCanonical). Its errors wrap ErrMalformed, ErrTooDeep or
// ErrNumberRange.
func Canonical(doc []byte) ([]byte, error) {
	return appendCanonicalDoc(make([]byte, 0, len(doc)), doc)
}

// appendCanonicalDoc appends the canonical form of doc to b.
func appendCanonicalDoc(b, doc []byte) ([]byte, error) {
	if out, ok := Ignore(nil).AppendCanonicalBytes(b, doc); ok {
		return out, nil
	}
	v, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	return Ignore(nil).AppendCanonical(b, v)
}

// Equal reports whether two JSON documents are equal as values. Its errors
// are those of Canonical, for either document.
func Equal(a, b []byte) (bool, error) {
	bp := equalBuffers.Get().(*[]byte)
	ca, err := appendCanonicalDoc((*bp)[:0], a)
	if err != nil {
		equalBuffers.Put(bp)
		return false, err
	}
	n := len(ca)
	both, err := appendCanonicalDoc(ca, b)
	if err != nil {
		equalBuffers.Put(bp)
		return false, err
	}
	eq := string(both[:n]) == string(both[n:])
	if cap(both) <= maxPooledEqual {
		*bp = both
	}
	equalBuffers.Put(bp)
	return eq, nil
}

// equalBuffers hold the canonical forms Equal compares, between calls.
var equalBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledEqual bounds the buffers kept in equalBuffers, so that one huge
// document does not pin its size in memory.
const maxPooledEqual = 64 << 10
