package match

import (
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/match"
)

// pattern is a parsed ignore path: dot-separated segments in gjson syntax,
// where "*" or "#" match any key or array index and other segments may use
// gjson's * and ? wildcards.
type pattern []string

func parsePattern(p string) (pattern, bool) {
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

func (p pattern) matchSeg(depth int, seg string, index bool) bool {
	s := p[depth]
	if s == "*" || (s == "#" && index) {
		return true
	}
	if s == seg {
		return true
	}
	return match.IsPattern(s) && match.Match(seg, s)
}

// walker canonicalises a JSON value while skipping ignored paths.
type walker struct {
	patterns []pattern
}

// live is the set of patterns still matching at a depth; a nil live set at
// depth 0 means all patterns.
func (w *walker) advance(live []int, depth int, seg string, index bool) (next []int, ignored bool) {
	for _, pi := range live {
		p := w.patterns[pi]
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

func (w *walker) all() []int {
	live := make([]int, len(w.patterns))
	for i := range live {
		live[i] = i
	}
	return live
}

// canon appends the canonical form of v to b.
func (w *walker) canon(b []byte, v gjson.Result, live []int, depth int) []byte {
	var st canonState
	return w.canonInto(&st, b, v, live, depth)
}

// canonState is the scratch space of one canonicalisation: the members of
// the objects being sorted and the live pattern sets, kept as stacks so
// that a whole body costs a few allocations instead of several per value.
type canonState struct {
	kvs  []member
	live []int
}

type member struct {
	k string
	v gjson.Result
}

// advanceInto is advance with the next live set pushed onto st.live; the
// caller truncates st.live back to its length before the call.
func (w *walker) advanceInto(st *canonState, live []int, depth int, seg string, index bool) (next []int, ignored bool) {
	base := len(st.live)
	for _, pi := range live {
		p := w.patterns[pi]
		if depth >= len(p) || !p.matchSeg(depth, seg, index) {
			continue
		}
		if depth == len(p)-1 {
			st.live = st.live[:base]
			return nil, true
		}
		st.live = append(st.live, pi)
	}
	if len(st.live) == base {
		return nil, false
	}
	return st.live[base:len(st.live):len(st.live)], false
}

func (w *walker) canonInto(st *canonState, b []byte, v gjson.Result, live []int, depth int) []byte {
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
			next, ignored := w.advanceInto(st, live, depth, e.k, false)
			if ignored {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendQuote(b, e.k)
			b = append(b, ':')
			b = w.canonInto(st, b, e.v, next, depth+1)
			st.live = st.live[:mark]
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
				next, ignored = w.advanceInto(st, live, depth, strconv.Itoa(n), true)
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
			b = w.canonInto(st, b, val, next, depth+1)
			st.live = st.live[:mark]
			return true
		})
		return append(b, ']')
	}
	return appendLeaf(b, v)
}

// appendQuote appends s quoted exactly as strconv.AppendQuote does (the
// canonical form, and so every match key, depends on it), with a fast path
// for printable ASCII, where that quoting only escapes '"' and '\\'.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	for {
		i := strings.IndexAny(s, `"\\`)
		if i < 0 {
			break
		}
		b = append(b, s[:i]...)
		b = append(b, '\\', s[i])
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '"')
}

// appendLeaf appends the canonical spelling of a scalar.
func appendLeaf(b []byte, v gjson.Result) []byte {
	switch v.Type {
	case gjson.String:
		return appendQuote(b, v.Str)
	case gjson.Number:
		if isPlainInt(v.Raw) {
			if v.Raw == "-0" {
				return append(b, '0')
			}
			return append(b, v.Raw...)
		}
		return append(b, canonNumber(v.Raw)...)
	case gjson.True:
		return append(b, "true"...)
	case gjson.False:
		return append(b, "false"...)
	case gjson.Null:
		return append(b, "null"...)
	}
	return append(b, v.Raw...)
}

func canonNumber(raw string) string {
	if isPlainInt(raw) {
		if raw == "-0" {
			return "0"
		}
		return raw
	}
	var r big.Rat
	if _, ok := r.SetString(raw); !ok {
		return raw
	}
	return r.RatString()
}

func isPlainInt(s string) bool {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
